/* Calls system calls the box's seccomp filter refuses, and prints "name=errno-name"
 * for each. Compiled on the host by the hostile tests and run inside a box as an agent. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

static void report(const char *name, long rc) {
  const char *e = rc >= 0 ? "OK" : errno == EPERM ? "EPERM" : errno == ENOSYS ? "ENOSYS" : strerrorname_np(errno);
  printf("%s=%s\n", name, e ? e : "?");
}

int main(void) {
  struct io_uring_params p;
  memset(&p, 0, sizeof p);
  report("io_uring_setup", syscall(SYS_io_uring_setup, 1, &p));
  report("keyctl", syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
  report("add_key", syscall(SYS_add_key, "user", "k", "v", 1, KEY_SPEC_SESSION_KEYRING));
  report("ptrace", ptrace(PTRACE_TRACEME, 0, 0, 0));
  report("setns", syscall(SYS_setns, -1, 0));
  report("unshare_user", unshare(CLONE_NEWUSER));
  report("clone3", syscall(SYS_clone3, NULL, 0));
  report("clone_newuser", syscall(SYS_clone, CLONE_NEWUSER | 17, 0, 0, 0, 0));
  report("userfaultfd", syscall(SYS_userfaultfd, 0));
  report("bpf", syscall(SYS_bpf, 0, NULL, 0));
  report("perf_event_open", syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
  char c = 'x';
  report("tiocsti", syscall(SYS_ioctl, 0, (1UL << 32) | TIOCSTI, &c));
  report("process_vm_readv", syscall(SYS_process_vm_readv, getppid(), NULL, 0, NULL, 0, 0));
  report("mount", syscall(SYS_mount, "none", "/tmp", "tmpfs", 0, NULL));
  report("open_tree", syscall(SYS_open_tree, -100, "/", 0));
  report("fork", fork() == 0 ? (_exit(0), 0) : 0);
  return 0;
}
