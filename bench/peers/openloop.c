// An open-loop HTTP/1.1 load generator in C, for bench/_open-loop.ts (wrk2's idea, written for
// this project): requests leave on a fixed-rate timetable whatever the server does, and each
// latency is measured from the request's INTENDED send time (no coordinated omission). It
// exists because the node generator costs ~0.8 ms of CPU per request against a server that
// closes every connection (gunicorn's sync workers), which on a 2-core machine starves the
// server it measures; this one costs a few tens of microseconds, mostly the kernel's.
//
// Built at bench time with the system's cc into the bench cache (bench/_open-loop.ts), never a
// project dependency. One thread, epoll, non-blocking sockets, a timerfd for the timetable.
//
//   openloop HOST PORT PATH RATE DURATION_MS CONNECTIONS DRAIN_MS BODIES_FILE
//
// BODIES_FILE holds the POST bodies, one per line (sent in turn, as application/json).
// Writes one JSON object on stdout: counts, statuses, the send and answer windows, the largest
// send lag, and the 2xx latencies in microseconds from the intended and from the actual send.
// A request waits in the client (its latency counting) only while every connection is busy.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define RECV_CAP 65536
#define TIMER_TAG UINT64_MAX

typedef struct {
  int fd;            // -1: no socket
  int connected;     // connect completed
  int watchingOut;   // EPOLLOUT is in its epoll interest
  int busy;          // a request is out on it
  long req;          // the request's index, or -1 during warm-up
  double intended;   // its intended send time, ms
  double sent;       // its actual send time, ms
  size_t written;    // bytes of the request written so far
  size_t reqLen;
  const char *reqBuf;
  size_t got;        // bytes received for the current response
  char buf[RECV_CAP];
} Conn;

static double nowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void die(const char *what) {
  fprintf(stderr, "openloop: %s: %s\n", what, strerror(errno));
  exit(2);
}

// ── the requests ──────────────────────────────────────────────────────────────────────────
static char **requests;
static size_t *requestLens;
static size_t requestCount;

static void loadRequests(const char *file, const char *host, int port, const char *path) {
  FILE *f = fopen(file, "r");
  if (f == NULL) die("open bodies file");
  size_t cap = 16;
  requests = malloc(cap * sizeof *requests);
  requestLens = malloc(cap * sizeof *requestLens);
  char *line = NULL;
  size_t lineCap = 0;
  ssize_t n;
  while ((n = getline(&line, &lineCap, f)) >= 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (n == 0) continue;
    if (requestCount == cap) {
      cap *= 2;
      requests = realloc(requests, cap * sizeof *requests);
      requestLens = realloc(requestLens, cap * sizeof *requestLens);
    }
    char *r = NULL;
    int len = asprintf(&r,
                       "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                       "Content-Length: %zd\r\n\r\n%s",
                       path, host, port, n, line);
    if (len < 0) die("asprintf");
    requests[requestCount] = r;
    requestLens[requestCount] = (size_t)len;
    requestCount++;
  }
  free(line);
  fclose(f);
  if (requestCount == 0) {
    fprintf(stderr, "openloop: no bodies in %s\n", file);
    exit(2);
  }
}

// ── results ───────────────────────────────────────────────────────────────────────────────
static uint32_t *latUs, *fromSendUs;
static size_t latCount;
static long statusCounts[600];
static long errors, successes, answeredFailures, outstanding;
static double lastAnswerMs;

static void record(Conn *c, int status, double at) {
  if (c->req < 0) return;  // warm-up
  outstanding--;
  if (at > lastAnswerMs) lastAnswerMs = at;
  if (status >= 200 && status < 300) {
    successes++;
    latUs[latCount] = (uint32_t)((at - c->intended) * 1000.0);
    fromSendUs[latCount] = (uint32_t)((at - c->sent) * 1000.0);
    latCount++;
  } else {
    answeredFailures++;
  }
  if (status > 0 && status < 600) statusCounts[status]++;
  else errors++;
}

// ── connections ───────────────────────────────────────────────────────────────────────────
static int epfd;
static struct sockaddr_in addr;
static Conn *conns;
static int connCount;

static void closeConn(Conn *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->connected = 0;
  c->busy = 0;
  c->got = 0;
}

static int openConn(Conn *c, int index) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0 && errno != EINPROGRESS) {
    close(fd);
    return -1;
  }
  struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP, .data.u64 = (uint64_t)index};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) die("epoll_ctl add");
  c->fd = fd;
  c->connected = 0;
  c->watchingOut = 1;
  return 0;
}

static void fail(Conn *c, double at) {
  if (c->busy) record(c, 0, at);
  closeConn(c);
}

// Wait for writability only while a request is partly written (epoll is level-triggered: a
// writable socket left in the set would wake the loop on every pass).
static void watch(Conn *c, int index, int writable) {
  if (c->watchingOut == writable) return;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (writable ? EPOLLOUT : 0),
                           .data.u64 = (uint64_t)index};
  if (epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0) die("epoll_ctl mod");
  c->watchingOut = writable;
}

static void flushWrite(Conn *c, int index, double at) {
  while (c->written < c->reqLen) {
    ssize_t n = write(c->fd, c->reqBuf + c->written, c->reqLen - c->written);
    if (n < 0) {
      if (errno == EAGAIN) {
        watch(c, index, 1);
        return;
      }
      fail(c, at);
      return;
    }
    c->written += (size_t)n;
  }
  watch(c, index, 0);
}

// Starts request `req` (intended at `intended`) on a connection; returns 0, or -1 when it
// could not be started (the caller counts it failed).
static int start(Conn *c, int index, long req, double intended, double at) {
  if (c->fd < 0 && openConn(c, index) < 0) return -1;
  c->busy = 1;
  c->req = req;
  c->intended = intended;
  c->sent = at;
  c->got = 0;
  c->written = 0;
  size_t which = (req < 0 ? (size_t)index : (size_t)req) % requestCount;
  c->reqBuf = requests[which];
  c->reqLen = requestLens[which];
  if (c->connected) flushWrite(c, index, at);
  return 0;
}

// A complete response in c->buf? Returns its length (headers + body) and sets *status and
// *closeAfter, or 0 when more bytes are needed, or -1 when it cannot be parsed.
static long parseResponse(Conn *c, int *status, int *closeAfter) {
  c->buf[c->got] = '\0';
  char *end = strstr(c->buf, "\r\n\r\n");
  if (end == NULL) return c->got >= RECV_CAP - 1 ? -1 : 0;
  size_t headLen = (size_t)(end - c->buf) + 4;
  if (c->got < 12 || strncmp(c->buf, "HTTP/1.", 7) != 0) return -1;
  *status = atoi(c->buf + 9);
  *closeAfter = c->buf[7] == '0';
  long contentLength = -1;
  int chunked = 0;
  for (char *line = strstr(c->buf, "\r\n") + 2; line < end; line = strstr(line, "\r\n") + 2) {
    if (strncasecmp(line, "content-length:", 15) == 0) contentLength = atol(line + 15);
    else if (strncasecmp(line, "connection:", 11) == 0) {
      const char *v = line + 11;
      while (*v == ' ') v++;
      if (strncasecmp(v, "close", 5) == 0) *closeAfter = 1;
      else if (strncasecmp(v, "keep-alive", 10) == 0) *closeAfter = 0;
    } else if (strncasecmp(line, "transfer-encoding:", 18) == 0 && strcasestr(line, "chunked") != NULL &&
               strcasestr(line, "chunked") < strstr(line, "\r\n"))
      chunked = 1;
  }
  if (chunked) {
    char *last = strstr(c->buf + headLen, "0\r\n\r\n");
    if (last == NULL) return c->got >= RECV_CAP - 1 ? -1 : 0;
    return (long)(last - c->buf) + 5;
  }
  if (contentLength < 0) return -1;  // this generator needs a framed response
  size_t total = headLen + (size_t)contentLength;
  if (total >= RECV_CAP) return -1;
  return c->got >= total ? (long)total : 0;
}

// ── the timetable ─────────────────────────────────────────────────────────────────────────
static long *waiting;  // indices of requests due but not yet on a connection (a FIFO)
static long waitHead, waitTail;

static Conn *freeConn(int *index) {
  Conn *spare = NULL;
  int spareIndex = -1;
  for (int i = 0; i < connCount; i++) {
    Conn *c = &conns[i];
    if (c->busy) continue;
    if (c->fd >= 0 && c->connected) {
      *index = i;
      return c;
    }
    if (spare == NULL) {
      spare = c;
      spareIndex = i;
    }
  }
  *index = spareIndex;
  return spare;
}

int main(int argc, char **argv) {
  if (argc != 9) {
    fprintf(stderr,
            "usage: openloop HOST PORT PATH RATE DURATION_MS CONNECTIONS DRAIN_MS BODIES_FILE\n");
    return 2;
  }
  const char *host = argv[1];
  int port = atoi(argv[2]);
  const char *path = argv[3];
  double rate = atof(argv[4]);
  double durationMs = atof(argv[5]);
  connCount = atoi(argv[6]);
  double drainMs = atof(argv[7]);
  if (port <= 0 || rate <= 0 || durationMs <= 0 || connCount <= 0) {
    fprintf(stderr, "openloop: PORT, RATE, DURATION_MS and CONNECTIONS must be positive\n");
    return 2;
  }
  loadRequests(argv[8], host, port, path);
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons((uint16_t)port);
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1) {
    fprintf(stderr, "openloop: HOST must be an IPv4 address, got %s\n", host);
    return 2;
  }
  epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) die("epoll_create1");
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tfd < 0) die("timerfd_create");
  struct epoll_event tev = {.events = EPOLLIN, .data.u64 = TIMER_TAG};
  if (epoll_ctl(epfd, EPOLL_CTL_ADD, tfd, &tev) < 0) die("epoll_ctl timer");

  conns = calloc((size_t)connCount, sizeof *conns);
  for (int i = 0; i < connCount; i++) conns[i].fd = -1;
  long planned = (long)(durationMs / 1000.0 * rate);
  double interval = 1000.0 / rate;
  latUs = malloc((size_t)(planned + 1) * sizeof *latUs);
  fromSendUs = malloc((size_t)(planned + 1) * sizeof *fromSendUs);
  waiting = malloc((size_t)(planned + 1) * sizeof *waiting);

  struct epoll_event events[256];
  // Warm-up: one request on each of the first min(connections, 64), answers not counted (a
  // keep-alive server's connections are then open before the clock starts).
  int warm = connCount < 64 ? connCount : 64;
  double t = nowMs();
  for (int i = 0; i < warm; i++) start(&conns[i], i, -1, t, t);
  for (double deadline = t + 10000; nowMs() < deadline;) {
    int busy = 0;
    for (int i = 0; i < warm; i++) busy += conns[i].busy;
    if (busy == 0) break;
    int n = epoll_wait(epfd, events, 256, 100);
    for (int k = 0; k < n; k++) {
      if (events[k].data.u64 == TIMER_TAG) continue;
      Conn *c = &conns[events[k].data.u64];
      if (c->fd < 0) continue;
      int e = (int)events[k].events;
      if (!c->connected && (e & EPOLLOUT)) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0) {
          closeConn(c);
          continue;
        }
        c->connected = 1;
        flushWrite(c, (int)events[k].data.u64, nowMs());
      } else if (c->connected && (e & EPOLLOUT) && c->busy)
        flushWrite(c, (int)events[k].data.u64, nowMs());
      if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        ssize_t r = read(c->fd, c->buf + c->got, RECV_CAP - 1 - c->got);
        if (r <= 0) {
          closeConn(c);
          continue;
        }
        c->got += (size_t)r;
        int status = 0, closeAfter = 0;
        long len = parseResponse(c, &status, &closeAfter);
        if (len != 0) {
          if (len < 0 || closeAfter) closeConn(c);
          else {
            c->busy = 0;
            c->got = 0;
          }
        }
      }
    }
  }
  for (int i = 0; i < warm; i++)
    if (conns[i].busy) closeConn(&conns[i]);

  double startMs = nowMs();
  long next = 0;  // the next request on the timetable
  double lastSendMs = startMs, maxLagMs = 0;
  int armed = 0;
  for (;;) {
    double now = nowMs();
    while (next < planned && startMs + next * interval <= now) waiting[waitTail++] = next++;
    while (waitHead < waitTail) {
      int index;
      Conn *c = freeConn(&index);
      if (c == NULL) break;
      long req = waiting[waitHead++];
      double intended = startMs + req * interval;
      if (now - intended > maxLagMs) maxLagMs = now - intended;
      lastSendMs = now;
      outstanding++;
      if (start(c, index, req, intended, now) < 0) {
        c->req = req;
        c->busy = 1;
        record(c, 0, now);
        c->busy = 0;
      }
    }
    if (next >= planned && waitHead == waitTail && outstanding == 0) break;
    if (next >= planned && now > startMs + durationMs + drainMs) break;
    if (next < planned && !armed) {
      double due = startMs + next * interval;
      struct itimerspec its = {0};
      its.it_value.tv_sec = (time_t)(due / 1000.0);
      its.it_value.tv_nsec = (long)((due - its.it_value.tv_sec * 1000.0) * 1e6);
      if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
      if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) < 0) die("timerfd_settime");
      armed = 1;
    }
    int n = epoll_wait(epfd, events, 256, next < planned ? 1000 : 50);
    double at = nowMs();
    for (int k = 0; k < n; k++) {
      if (events[k].data.u64 == TIMER_TAG) {
        uint64_t expirations;
        if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timer");
        armed = 0;
        continue;
      }
      Conn *c = &conns[events[k].data.u64];
      if (c->fd < 0) continue;
      int e = (int)events[k].events;
      if (!c->connected && (e & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err != 0 || (e & EPOLLERR)) {
          fail(c, at);
          continue;
        }
        c->connected = 1;
        if (c->busy) flushWrite(c, (int)events[k].data.u64, at);
        if (c->fd < 0) continue;
      } else if ((e & EPOLLOUT) && c->busy && c->written < c->reqLen) {
        flushWrite(c, (int)events[k].data.u64, at);
        if (c->fd < 0) continue;
      }
      if (e & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
        ssize_t r = read(c->fd, c->buf + c->got, RECV_CAP - 1 - c->got);
        if (r < 0 && errno == EAGAIN) continue;
        if (r <= 0) {
          fail(c, at);  // closed or reset: an answer never came
          continue;
        }
        if (!c->busy) {  // bytes nobody asked for
          closeConn(c);
          continue;
        }
        c->got += (size_t)r;
        int status = 0, closeAfter = 0;
        long len = parseResponse(c, &status, &closeAfter);
        if (len == 0) continue;
        if (len < 0) {
          fail(c, at);
          continue;
        }
        record(c, status, at);
        c->busy = 0;
        c->got = 0;
        if (closeAfter) closeConn(c);
      }
    }
  }
  double endMs = nowMs();
  long unanswered = outstanding;
  long sent = next - (waitTail - waitHead);

  printf("{\"planned\":%ld,\"sent\":%ld,\"successes\":%ld,\"failed\":%ld,\"unanswered\":%ld,", planned,
         sent, successes, answeredFailures + unanswered + (long)(waitTail - waitHead), unanswered);
  printf("\"statuses\":{");
  int first = 1;
  for (int s = 0; s < 600; s++)
    if (statusCounts[s] > 0) {
      printf("%s\"%d\":%ld", first ? "" : ",", s, statusCounts[s]);
      first = 0;
    }
  if (errors > 0) printf("%s\"error\":%ld", first ? "" : ",", errors);
  printf("},\"sendWindowMs\":%.3f,\"answerWindowMs\":%.3f,\"maxSendLagMs\":%.3f,",
         lastSendMs - startMs + interval,
         (lastAnswerMs - startMs > durationMs ? lastAnswerMs - startMs : durationMs), maxLagMs);
  (void)endMs;
  printf("\"latenciesUs\":[");
  for (size_t i = 0; i < latCount; i++) printf(i == 0 ? "%u" : ",%u", latUs[i]);
  printf("],\"fromSendUs\":[");
  for (size_t i = 0; i < latCount; i++) printf(i == 0 ? "%u" : ",%u", fromSendUs[i]);
  printf("]}\n");
  return 0;
}
