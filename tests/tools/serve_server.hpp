#pragma once
// `tilewave serve` started as a child process for the server's tests
// (serve_test, serve_browser_test), and raw HTTP requests to it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/test_support.hpp"

namespace tw::test {

// The server as a child process; its first line of stdout names the port.
class Server {
 public:
  explicit Server(const std::vector<std::string>& args) {
    int out[2];
    if (pipe2(out, O_CLOEXEC) != 0) return;  // no other child started meanwhile holds it
    // argv is made before fork: the test process has threads, so the child
    // only calls async-signal-safe functions.
    std::vector<std::string> a{cli_path(), "serve"};
    a.insert(a.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out[1], 1);
      close(out[0]);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    out_ = fdopen(out[0], "r");
    char line[512];
    if (out_ && fgets(line, sizeof line, out_)) {
      first_line_ = line;
      const size_t p = first_line_.rfind(':');
      if (first_line_.find("serving") != std::string::npos && p != std::string::npos)
        port_ = std::atoi(first_line_.c_str() + p + 1);
    }
  }
  ~Server() {
    if (pid_ > 0 && !waited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_) fclose(out_);
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  const std::string& first_line() const { return first_line_; }
  // Sends sig and waits up to `seconds`; the exit status, or -1 on a timeout
  // or a death by signal.
  int stop(int sig, double seconds, std::string* rest = nullptr) {
    kill(pid_, sig);
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    int status = 0;
    while (std::chrono::steady_clock::now() < end) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        waited_ = true;
        if (rest) {
          char line[512];
          while (fgets(line, sizeof line, out_)) *rest += line;
        }
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  // Peak resident memory (VmHWM) in bytes.
  size_t peak_rss() const {
    std::ifstream f("/proc/" + std::to_string(pid_) + "/status");
    std::string key;
    size_t kb = 0;
    while (f >> key) {
      if (key == "VmHWM:") {
        f >> kb;
        return kb * 1024;
      }
    }
    return 0;
  }

 private:
  pid_t pid_ = -1;
  FILE* out_ = nullptr;
  int port_ = 0;
  bool waited_ = false;
  std::string first_line_;
};

// An answer: status 0 when there was no HTTP answer at all.
struct HttpReply {
  int status = 0;
  std::string head, body;  // head: the status line and headers
  // The value of header `name` (case as the server writes it), or "".
  std::string header(const std::string& name) const {
    const size_t p = head.find("\r\n" + name + ": ");
    if (p == std::string::npos) return "";
    const size_t v = p + name.size() + 4;
    return head.substr(v, head.find("\r\n", v) - v);
  }
};

// A request as raw bytes on a fresh connection, read to its close: an
// independent client (no client library to tidy the path).
inline HttpReply http_request(int port, const std::string& bytes, bool half_close = false) {
  HttpReply r;
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(s);
    return r;
  }
  timeval tv{30, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  (void)!send(s, bytes.data(), bytes.size(), MSG_NOSIGNAL);
  // A truncated request (junk) ends here rather than at the server's read
  // timeout. Not for whole requests: httplib answers nothing on a half-closed
  // connection.
  if (half_close) shutdown(s, SHUT_WR);
  std::string reply;
  char buf[16384];
  for (ssize_t n; (n = recv(s, buf, sizeof buf, 0)) > 0;) reply.append(buf, static_cast<size_t>(n));
  close(s);
  if (reply.rfind("HTTP/1.1 ", 0) == 0) r.status = std::atoi(reply.c_str() + 9);
  const size_t body = reply.find("\r\n\r\n");
  r.head = reply.substr(0, body);
  if (body != std::string::npos) r.body = reply.substr(body + 4);
  return r;
}

inline HttpReply http_get(int port, const std::string& path) {
  return http_request(port, "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
}

}  // namespace tw::test
