// Physical limits of this machine, measured the way a workload manager pays them:
//   spawn   fork + exec + wait of /bin/true (what launching a trivial job costs at least)
//   rtt     one request/response round trip over loopback TCP (TCP_NODELAY, 64-byte messages)
//   fsync   a 100-byte append followed by fdatasync (one durable journal commit)
// Prints "key<TAB>microseconds" lines (medians) so bench/compare-slurm can read them.
// Usage: limits [DIR_FOR_THE_FSYNC_FILE] [ROUNDS]
// Build: cc -O2 -o limits bench/limits.c -lpthread
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* v, int n) {
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die(const char* what) {
  perror(what);
  exit(1);
}

static double bench_spawn(int rounds) {
  double* v = malloc(sizeof(double) * rounds);
  extern char** environ;
  for (int i = 0; i < rounds; i++) {
    double t0 = now_us();
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
      char* argv[] = {"/bin/true", NULL};
      execve("/bin/true", argv, environ);
      _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) < 0) die("waitpid");
    v[i] = now_us() - t0;
  }
  double m = median(v, rounds);
  free(v);
  return m;
}

static void* echo_server(void* arg) {
  int lfd = *(int*)arg;
  int fd = accept(lfd, NULL, NULL);
  if (fd < 0) return NULL;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char buf[64];
  for (;;) {
    ssize_t got = 0;
    while (got < (ssize_t)sizeof buf) {
      ssize_t r = read(fd, buf + got, sizeof buf - got);
      if (r <= 0) goto out;
      got += r;
    }
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) break;
  }
out:
  close(fd);
  return NULL;
}

static double bench_rtt(int rounds) {
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (lfd < 0) die("socket");
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(lfd, (struct sockaddr*)&a, sizeof a) < 0) die("bind");
  if (listen(lfd, 1) < 0) die("listen");
  socklen_t len = sizeof a;
  getsockname(lfd, (struct sockaddr*)&a, &len);
  pthread_t th;
  pthread_create(&th, NULL, echo_server, &lfd);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr*)&a, sizeof a) < 0) die("connect");
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char buf[64] = {0};
  double* v = malloc(sizeof(double) * rounds);
  for (int i = 0; i < rounds; i++) {
    double t0 = now_us();
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) die("write");
    ssize_t got = 0;
    while (got < (ssize_t)sizeof buf) {
      ssize_t r = read(fd, buf + got, sizeof buf - got);
      if (r <= 0) die("read");
      got += r;
    }
    v[i] = now_us() - t0;
  }
  close(fd);
  pthread_join(th, NULL);
  close(lfd);
  double m = median(v, rounds);
  free(v);
  return m;
}

static double bench_fsync(const char* dir, int rounds) {
  char path[4096];
  snprintf(path, sizeof path, "%s/limits-fsync.%d", dir, (int)getpid());
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) die(path);
  char rec[100];
  memset(rec, 'x', sizeof rec);
  double* v = malloc(sizeof(double) * rounds);
  for (int i = 0; i < rounds; i++) {
    double t0 = now_us();
    if (write(fd, rec, sizeof rec) != (ssize_t)sizeof rec) die("write");
    if (fdatasync(fd) < 0) die("fdatasync");
    v[i] = now_us() - t0;
  }
  close(fd);
  unlink(path);
  double m = median(v, rounds);
  free(v);
  return m;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : ".";
  int rounds = argc > 2 ? atoi(argv[2]) : 300;
  if (rounds < 1) rounds = 1;
  bench_spawn(10);  // warm the page cache
  printf("limit_spawn_us\t%.1f\n", bench_spawn(rounds));
  printf("limit_rtt_us\t%.1f\n", bench_rtt(rounds * 10));
  printf("limit_fsync_us\t%.1f\n", bench_fsync(dir, rounds));
  return 0;
}
