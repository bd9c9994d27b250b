// HTTPS with --tls-cert/--tls-key, and gateway memory while a program floods its output.
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gateway_process.hpp"

using namespace sandgate::test;
using nlohmann::json;

namespace {

std::size_t resident_kib(pid_t pid, const char* field = "VmRSS:") {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string key;
  std::size_t value = 0;
  for (std::string line; std::getline(status, line);) {
    std::istringstream in(line);
    in >> key >> value;
    if (key == field) return value;
  }
  return 0;
}

}  // namespace

TEST_CASE("HTTPS: the gateway serves MCP over TLS with the given certificate",
          "[integration][tls]") {
  auto dir =
      std::filesystem::temp_directory_path() / ("sandgate-tls-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::string cert = (dir / "cert.pem").string(), key = (dir / "key.pem").string();
  std::string make =
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 "
      "-subj /CN=localhost -keyout " +
      key + " -out " + cert + " > /dev/null 2>&1";
  REQUIRE(std::system(make.c_str()) == 0);
  GatewayProcess gw({"--tls-cert", cert, "--tls-key", key}, {"SANDGATE_TOKEN=test-token"},
                    /*tls=*/true);
  std::filesystem::remove_all(dir);

  boost::asio::io_context io;
  boost::asio::ssl::context ctx(boost::asio::ssl::context::tls_client);
  ctx.set_verify_mode(boost::asio::ssl::verify_none);  // a throwaway self-signed certificate
  boost::beast::ssl_stream<boost::beast::tcp_stream> stream(io, ctx);
  boost::beast::get_lowest_layer(stream).expires_after(std::chrono::seconds(30));
  boost::beast::get_lowest_layer(stream).connect(
      {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(gw.port())});
  stream.handshake(boost::asio::ssl::stream_base::client);
  http::request<http::string_body> req{http::verb::post, "/mcp", 11};
  req.set(http::field::host, "localhost");
  for (auto& [k, v] : GatewayProcess::mcp_headers()) req.set(k, v);
  req.body() = json{{"jsonrpc", "2.0"},
                    {"id", 1},
                    {"method", "initialize"},
                    {"params", {{"protocolVersion", "2025-11-25"}}}}
                   .dump();
  req.prepare_payload();
  http::write(stream, req);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> res;
  http::read(stream, buffer, res);
  CHECK(res.result_int() == 200);
  CHECK(res["Mcp-Session-Id"].size() == 32);
}

TEST_CASE("an output flood leaves gateway memory flat", "[integration][limits]") {
  GatewayProcess gw({});
  std::string id = gw.initialize();
  std::string flood =
      "import sys\nchunk = 'x' * 65536\nfor _ in range(1600): sys.stdout.write(chunk)\n";
  // The first flood warms allocator pools; the second must not grow the peak further.
  auto first = gw.execute(id, flood, "python", 120);
  INFO("first flood: " << first.dump().substr(0, 2000));
  CHECK(first["structuredContent"]["truncated"] == true);
  std::size_t peak_before = resident_kib(gw.pid(), "VmHWM:");
  auto second = gw.execute(id, flood, "python", 120);
  CHECK(second["structuredContent"]["truncated"] == true);
  CHECK(second["structuredContent"]["stdout"].get<std::string>().size() == 1u << 20);
  std::size_t peak_after = resident_kib(gw.pid(), "VmHWM:");
  INFO("gateway peak RSS before " << peak_before << " KiB, after " << peak_after
                                  << " KiB (100 MB written)");
  CHECK(peak_after - peak_before < 16 * 1024);
}
