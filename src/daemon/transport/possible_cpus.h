/*
 * possible_cpus.h - how many queues FUSE over io_uring has: the kernel
 * makes num_possible_cpus() of them, indexed by CPU number, and waits
 * until each has an entry.  Shared by the daemon's transport and the
 * transport probe (bench/uring_probe/).
 */
#ifndef ORDFS_POSSIBLE_CPUS_H
#define ORDFS_POSSIBLE_CPUS_H

/* The highest possible CPU + 1 (/sys/devices/system/cpu/possible: "0-1",
 * "0-3,8-11"), not the online count. */
unsigned possible_cpus(void);

#endif
