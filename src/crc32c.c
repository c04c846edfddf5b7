/*
 * crc32c.c - CRC32C (Castagnoli), the checksum of every ordfs metadata block.
 *
 * Owns: ordfs_crc32c().  Slice-by-8 tables built once, thread-safely, on
 * first use.  Convention: ordfs_crc32c(seed, buf, len) continues a running
 * CRC; pass ~0u to start one, as the kernel's crc32c() does (no final xor).
 */
#include <pthread.h>

#include "format.h"

#define CRC32C_POLY 0x82f63b78u

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc32c_init_tables(void)
{
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t crc = n;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ CRC32C_POLY : crc >> 1;
		crc_table[0][n] = crc;
	}
	for (uint32_t n = 0; n < 256; n++) {
		uint32_t crc = crc_table[0][n];
		for (int t = 1; t < 8; t++) {
			crc = crc_table[0][crc & 0xff] ^ (crc >> 8);
			crc_table[t][n] = crc;
		}
	}
}

uint32_t ordfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	pthread_once(&crc_once, crc32c_init_tables);
	while (len >= 8) {
		uint32_t lo = le_get32(p) ^ crc;
		uint32_t hi = le_get32(p + 4);
		crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		      crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		      crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		      crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}
