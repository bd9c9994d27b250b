// A sandbox with egress (Limits::egress, issue #30): its programs may make TCP sockets, which
// reach its own loopback only, where the socket its supervisor handed over listens; every other
// socket kind is still refused. Without egress there is no such socket.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "sandbox_fixture.hpp"

using sandgate::sandbox::Language;

namespace {

sandgate::sandbox::HostConfig egress_config() {
  auto config = sandgate::test::SandboxFixture::default_config();
  config.limits.egress = true;
  config.pool.size = 0;  // the pool builds sandboxes without egress
  return config;
}

}  // namespace

TEST_CASE("a sandbox with egress reaches its proxy socket and nothing else", "[sandbox][egress]") {
  sandgate::test::SandboxFixture f(egress_config());
  if (!f.require_isolation()) return;
  auto sb = f.create();
  sandgate::UniqueFd listener = sb->take_egress_listener();
  REQUIRE(listener);
  CHECK_FALSE(sb->take_egress_listener());  // handed over once

  auto r =
      f.run(sb, Language::python,
            "import errno, os, socket\n"
            "def attempt(name, action):\n"
            "    try:\n"
            "        action()\n"
            "        print(name, 'ok')\n"
            "    except OSError as e:\n"
            "        print(name, errno.errorcode[e.errno])\n"
            "s = socket.create_connection(('127.0.0.1', 3128), timeout=5)\n"
            "s.sendall(b'through the proxy socket')\n"
            "s.close()\n"
            "print('proxy', os.environ.get('HTTPS_PROXY'))\n"
            "attempt('elsewhere', lambda: socket.create_connection(('10.1.2.3', 80), 3))\n"
            "attempt('bind', lambda: socket.socket().bind(('127.0.0.1', 3128)))\n"
            "attempt('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))\n"
            "attempt('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 1))\n"
            "attempt('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW))\n"
            "attempt('netlink', lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW))\n"
            "attempt('tcp6', lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM))\n"
            "attempt('sctp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))\n"
            "attempt('mptcp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262))\n"
            "attempt('tcp', lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 6))\n"
            "attempt('nodelay', lambda: socket.socket().setsockopt(6, 1, 1))\n"
            "attempt('ulp', lambda: socket.socket().setsockopt(6, 31, b'tls'))\n"
            // The kernel reads level and optname as int: upper bits set must not pass.
            "import ctypes\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "s = socket.socket()\n"
            "L = ctypes.c_long\n"
            "rc = libc.syscall(L(54), L(s.fileno()), L(0x100000006), L(0x10000001f),\n"
            "                  ctypes.c_char_p(b'tls'), L(3))\n"
            "print('ulp high bits', errno.errorcode.get(ctypes.get_errno(), rc))\n");
  INFO(r.stdout_text << r.stderr_text);
  CHECK(r.exit_code == 0);
  CHECK(r.stdout_text ==
        "proxy http://127.0.0.1:3128\n"
        "elsewhere ENETUNREACH\n"
        "bind EADDRINUSE\n"
        "udp EPERM\n"
        "raw EPERM\n"
        "packet EAFNOSUPPORT\n"
        "netlink EAFNOSUPPORT\n"
        "tcp6 ok\n"
        "sctp EPERM\n"
        "mptcp EPERM\n"
        "tcp ok\n"
        "nodelay ok\n"
        "ulp EPERM\n"
        "ulp high bits EPERM\n");

  // The connection waits in the listener's queue, for the gateway (here, the test) to take.
  int accepted = ::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  REQUIRE(accepted >= 0);
  sandgate::UniqueFd connection(accepted);
  char bytes[64] = {};
  ssize_t n = ::read(connection.get(), bytes, sizeof bytes);
  CHECK(std::string(bytes, n > 0 ? static_cast<std::size_t>(n) : 0) == "through the proxy socket");
}

TEST_CASE("a sandbox without egress has no proxy socket and makes no TCP socket",
          "[sandbox][egress]") {
  sandgate::test::SandboxFixture f;
  if (!f.require_isolation()) return;
  auto sb = f.create();
  CHECK_FALSE(sb->take_egress_listener());
  auto r = f.run(sb, Language::bash,
                 "env | grep -ci proxy\n"
                 "python3 -c 'import socket; socket.socket()' 2>&1 | tail -1\n");
  CHECK(r.stdout_text == "0\nOSError: [Errno 97] Address family not supported by protocol\n");
}
