/* The peers' clocks (freetds/bench.c, msodbc/bench.c): the timed span's wall time, CPU time and
 * page faults, as sqlclient-bench's Measure reads them for SQLClient. Included by path, compiled
 * by the bench's driver with `cc`, never part of the SwiftPM build. */
#ifndef SQLCLIENT_BENCH_PEER_CLOCK_H
#define SQLCLIENT_BENCH_PEER_CLOCK_H

#include <time.h>
#include <sys/resource.h>

/* Monotonic wall time, seconds. */
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* CPU time of every thread of the process, seconds. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* Minor page faults of the process so far (a page touched for the first time). */
static long faults_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

#endif
