// The operator's secrets file (secrets/secrets_file): what it accepts, and each line it refuses
// with its line number and why, never a value; the files' modes.
#include "secrets/secrets_file.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

using sandgate::secrets::parse_secrets;

namespace {

// Value files by path, in memory.
sandgate::secrets::ValueReader values(std::map<std::string, std::string> files) {
  return [files](const std::string& path) {
    auto it = files.find(path);
    if (it == files.end()) throw std::runtime_error("its value file: no such file");
    return it->second;
  };
}

std::string refusal_of(const std::string& text) {
  try {
    parse_secrets(text, "/etc/sg", values({{"/etc/sg/k", "s3cr3t-value\n"}}));
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a secrets file names each secret's host, header and value file", "[unit][secrets]") {
  auto set = parse_secrets(
      "# comment\n\n"
      "openai host=api.openai.com header=Authorization file=/run/keys/openai\n"
      "  internal   file=k header=X-Api-Key   host=10.1.2.3:8443 plain=yes \r\n",
      "/etc/sg", values({{"/run/keys/openai", "Bearer sk-one\n"}, {"/etc/sg/k", "two\r\n"}}));
  REQUIRE(set.size() == 2);
  auto openai = set.find("openai");
  REQUIRE(openai);
  CHECK(openai->header == "Authorization");
  CHECK(openai->value == "Bearer sk-one");  // one trailing newline taken off
  CHECK(openai->applies_to("api.openai.com", 443, 443));
  CHECK(openai->applies_to("API.OpenAI.com.", 80, 80));
  CHECK_FALSE(openai->applies_to("api.openai.com", 8443, 443));
  CHECK_FALSE(openai->applies_to("evil.api.openai.com", 443, 443));
  auto internal = set.find("internal");
  REQUIRE(internal);
  CHECK(internal->value == "two");  // relative to the file's directory
  CHECK(internal->applies_to("10.1.2.3", 8443, 443));
  CHECK(internal->plain_http);
  CHECK_FALSE(openai->plain_http);  // HTTPS only unless the line says plain=yes
  CHECK_FALSE(internal->applies_to("10.1.2.3", 443, 443));
  CHECK_FALSE(set.find("other"));
}

TEST_CASE("a bad secrets file line is refused with its number and why, never its value",
          "[unit][secrets]") {
  const std::string ok = "a host=x.example header=X-Key file=k\n";
  CHECK(refusal_of(ok).empty());
  CHECK(refusal_of("\n" + ok + ok) ==
        "secrets file line 3: a secret of that name is on an earlier line");
  CHECK(refusal_of(ok + "b host=x.example header=x-key file=k\n") ==
        "secrets file line 2: an earlier line sets the same header for the same host");
  CHECK(refusal_of("a host=x.example header=X-Key\n") == "secrets file line 1: file= is missing");
  CHECK(refusal_of("a host=x.example header=X-Key file=k file=k\n") ==
        "secrets file line 1: file= given twice");
  CHECK(refusal_of("a host=x.example header=X-Key file=k colour=red\n") ==
        "secrets file line 1: word 5 is not host=, header=, file= or plain=");
  CHECK(refusal_of("a host=x.example header=X-Key file=k plain=maybe\n") ==
        "secrets file line 1: plain= is yes or no");
  CHECK(refusal_of("a host=*.x.example header=X-Key file=k\n") ==
        "secrets file line 1: host= must name one host (no wildcard, no list)");
  CHECK(refusal_of("a host=x.example:99999 header=X-Key file=k\n") ==
        "secrets file line 1: host= the port is not a number from 1 to 65535");
  CHECK(refusal_of("a host=x.example header=Bad:Name file=k\n") ==
        "secrets file line 1: header= is not a header field name");
  CHECK(refusal_of("a host=x.example header=host file=k\n").find("a header the proxy writes") !=
        std::string::npos);
  CHECK(refusal_of("a host=x.example header=Proxy-Authorization file=k\n")
            .find("a header the proxy writes") != std::string::npos);
  CHECK(refusal_of("a/b host=x.example header=X-Key file=k\n") ==
        "secrets file line 1: a secret's name may hold letters, digits, '_', '-' and '.' only");
  CHECK(refusal_of("a host=x.example header=X-Key file=missing\n") ==
        "secrets file line 1: its value file: no such file");

  // A value that would end the header line, or smuggle another, is refused, and never echoed.
  for (std::string value : std::vector<std::string>{"one\ntwo", "one\r\nX-Other: 1", "", "\n",
                                                    " padded", std::string(9000, 'a')}) {
    std::string why;
    try {
      parse_secrets("a host=x.example header=X-Key file=/k\n", "/", values({{"/k", value}}));
    } catch (const std::runtime_error& e) {
      why = e.what();
    }
    INFO(value.substr(0, 20));
    CHECK(why.rfind("secrets file line 1: its value", 0) == 0);
    if (value.size() > 3) CHECK(why.find(value.substr(0, 4)) == std::string::npos);
  }
}

TEST_CASE("the secrets file and its value files are refused when others may read them",
          "[unit][secrets]") {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("sandgate-secrets-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text, mode_t mode) {
    std::ofstream(dir / name) << text;
    ::chmod((dir / name).c_str(), mode);
  };
  write("value", "the-value\n", 0600);
  write("secrets", "a host=x.example header=X-Key file=value\n", 0600);
  auto load = [&] {
    try {
      auto set = sandgate::secrets::load_secrets_file((dir / "secrets").string());
      return set.find("a")->value;
    } catch (const std::runtime_error& e) {
      return std::string("refused: ") + e.what();
    }
  };
  CHECK(load() == "the-value");
  ::chmod((dir / "value").c_str(), 0640);
  CHECK(load().find("may be read or written by its group or others") != std::string::npos);
  ::chmod((dir / "value").c_str(), 0600);
  ::chmod((dir / "secrets").c_str(), 0604);
  CHECK(load().find("secrets may be read or written by its group or others") != std::string::npos);
  fs::remove_all(dir);
}
