/*
 * crc32c.c - CRC32C (Castagnoli), the checksum of every ordfs metadata block.
 *
 * Owns: ordfs_crc32c().  On x86-64 with SSE4.2 the CRC32 instruction does
 * the work (chosen once at run time); elsewhere slice-by-8 tables built
 * once, thread-safely, on first use.  Both give identical results (the
 * unit test compares them with a bitwise reference).  Convention:
 * ordfs_crc32c(seed, buf, len) continues a running CRC; pass ~0u to start
 * one, as the kernel's crc32c() does (no final xor).
 */
#include <pthread.h>
#include <string.h>
#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

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

static uint32_t crc32c_tables(uint32_t crc, const uint8_t *p, size_t len)
{
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

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc32c_sse42(uint32_t crc, const uint8_t *p,
								 size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

/* Asked once; threads that race on the first call store the same answer
 * (relaxed atomics: any thread may be first). */
static bool have_sse42(void)
{
	static int cached = -1;
	int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
	if (v < 0) {
		v = __builtin_cpu_supports("sse4.2") ? 1 : 0;
		__atomic_store_n(&cached, v, __ATOMIC_RELAXED);
	}
	return v == 1;
}
#endif

uint32_t ordfs_crc32c(uint32_t crc, const void *buf, size_t len)
{
#if defined(__x86_64__)
	if (have_sse42())
		return crc32c_sse42(crc, buf, len);
#endif
	return crc32c_tables(crc, buf, len);
}

uint32_t ordfs_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	return crc32c_tables(crc, buf, len);
}
