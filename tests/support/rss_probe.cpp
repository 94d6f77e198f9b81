// tw_rss_probe FD PROGRAM ARGS...: runs PROGRAM and writes its peak RSS
// (KiB, wait4's ru_maxrss) to descriptor FD, then exits as PROGRAM did.
//
// Why a separate process: Linux keeps, in a process's peak RSS, the RSS of
// the memory image it exec'd from. A child forked straight from a test that
// holds a 64 MiB image reports at least 64 MiB, whatever it used itself, so
// "peak RSS within the budget" checked nothing. Forked from this small
// program instead, PROGRAM's figure is its own.
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: tw_rss_probe FD PROGRAM [ARGS...]\n");
    return 2;
  }
  const int fd = std::atoi(argv[1]);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    std::perror("tw_rss_probe: fork");
    return 127;
  }
  if (pid == 0) {
    close(fd);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the probe gone (killed): so is PROGRAM
    if (getppid() != parent) _exit(127);
    execvp(argv[2], argv + 2);
    std::fprintf(stderr, "exec %s failed: %s\n", argv[2], std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  struct rusage ru {};
  while (wait4(pid, &status, 0, &ru) < 0)
    if (errno != EINTR) return 127;
  char line[32];
  const int n = std::snprintf(line, sizeof line, "%ld\n", ru.ru_maxrss);
  if (write(fd, line, static_cast<size_t>(n)) != n) return 127;
  close(fd);
  if (WIFSIGNALED(status)) {
    std::signal(WTERMSIG(status), SIG_DFL);
    raise(WTERMSIG(status));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}
