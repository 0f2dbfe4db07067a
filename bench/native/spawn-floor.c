/*
 * The real floor of running a command: posix_spawn of a program (default /bin/true) and
 * waitpid for it, N times, from a process that does nothing else. Prints one line per
 * spawn, its wall time in microseconds. Built and run by bench/floor.ts. With GAP_US, it
 * sleeps that long before each spawn (untimed): the same spawn on a CPU that has rested,
 * as a command's is after the request that brings it.
 *
 * Usage: spawn-floor N [program [GAP_US]]
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: spawn-floor N [program [GAP_US]]\n");
    return 2;
  }
  long n = strtol(argv[1], NULL, 10);
  char *program = argc > 2 ? argv[2] : "/bin/true";
  long gap_us = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
  char *args[] = {program, NULL};
  for (long i = 0; i < n; i++) {
    if (gap_us > 0) usleep((useconds_t)gap_us);
    double t0 = now_us();
    pid_t pid;
    int rc = posix_spawn(&pid, program, NULL, NULL, args, environ);
    if (rc != 0) {
      fprintf(stderr, "spawn-floor: posix_spawn %s failed (%d)\n", program, rc);
      return 1;
    }
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      fprintf(stderr, "spawn-floor: %s did not exit 0\n", program);
      return 1;
    }
    printf("%.1f\n", now_us() - t0);
  }
  return 0;
}
