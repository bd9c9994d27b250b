#pragma once
// Runs a scenario in a forked child of the test process, for what must not touch the test
// process itself: a seccomp filter, a uid change. The child answers in text through a pipe;
// Catch2 assertions stay in the parent.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <exception>
#include <functional>
#include <string>

namespace sandgate::test {

// `scenario` returns the text the parent gets; an exception becomes "EXCEPTION: what".
inline std::string run_forked(const std::function<std::string()>& scenario) {
  int pipe[2];
  REQUIRE(::pipe2(pipe, O_CLOEXEC) == 0);
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::close(pipe[0]);
    std::string answer;
    try {
      answer = scenario();
    } catch (const std::exception& e) {
      answer = std::string("EXCEPTION: ") + e.what();
    }
    for (std::size_t done = 0; done < answer.size();) {
      ssize_t n = ::write(pipe[1], answer.data() + done, answer.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    ::_exit(0);  // no Catch2 teardown in the child
  }
  ::close(pipe[1]);
  std::string answer;
  char buffer[4096];
  for (ssize_t n; (n = ::read(pipe[0], buffer, sizeof buffer)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    answer.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  INFO("the scenario's child answered: " << answer);
  REQUIRE(WIFEXITED(status));
  return answer;
}

}  // namespace sandgate::test
