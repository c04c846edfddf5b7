/*
 * possible_cpus.c - the kernel's queue count for FUSE over io_uring
 * (possible_cpus.h).
 */
#include "possible_cpus.h"

#include <stdio.h>
#include <sys/sysinfo.h>

unsigned possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	int max = -1;
	if (f) {
		int a;
		while (fscanf(f, "%d", &a) == 1) {
			if (a > max)
				max = a;
			int c = fgetc(f);
			if (c != '-' && c != ',')
				break;
		}
		fclose(f);
	}
	if (max < 0)
		max = get_nprocs_conf() - 1;
	return max >= 0 ? (unsigned)max + 1 : 1;
}
