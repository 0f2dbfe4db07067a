/* Loads a classic BPF seccomp program from a file (struct sock_filter, 8 bytes each) onto
 * itself, then asks for sockets of a few families and prints "family=errno-name" for each.
 * The hostile tests run it on the host with the very program a box's boxd was given, so
 * what boxd's filter refuses is checked on its bytes, not on its source. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *name, int rc) {
  printf("%s=%s\n", name, rc >= 0 ? "OK" : strerrorname_np(errno));
  if (rc >= 0) close(rc);
}

int main(int argc, char **argv) {
  static struct sock_filter code[4096];
  if (argc != 2) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (!f) return perror("open"), 2;
  size_t n = fread(code, sizeof code[0], sizeof code / sizeof code[0], f);
  fclose(f);
  if (n == 0) return 2;
  struct sock_fprog prog = {.len = (unsigned short)n, .filter = code};
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return perror("no_new_privs"), 2;
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return perror("seccomp"), 2;
  report("vsock", socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
  report("packet", socket(AF_PACKET, SOCK_DGRAM, 0));
  report("netlink_audit", socket(AF_NETLINK, SOCK_RAW, 9 /* NETLINK_AUDIT */));
  report("inet", socket(AF_INET, SOCK_STREAM, 0));
  report("inet6", socket(AF_INET6, SOCK_DGRAM, 0));
  report("unix", socket(AF_UNIX, SOCK_STREAM, 0));
  return 0;
}
