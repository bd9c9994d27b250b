#include "secrets/secrets_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

namespace sandgate::secrets {
namespace {

// A header value is at most this long (the relay's request heads are bounded at 16 KiB).
constexpr std::size_t kMaxValueBytes = 8 * 1024;
constexpr std::size_t kMaxFileBytes = 1 << 20;
constexpr std::size_t kMaxNameBytes = 64;

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// RFC 9110 5.1: a field name is a token.
bool is_token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Headers that frame, route or belong to one hop (or to the proxy): the relay writes or drops
// them itself, so a secret may not set them.
bool reserved_header(std::string_view name) {
  for (std::string_view h : {"host", "content-length", "transfer-encoding", "connection",
                             "keep-alive", "te", "trailer", "upgrade", "expect"})
    if (iequals(name, h)) return true;
  return name.size() >= 6 && iequals(name.substr(0, 6), "proxy-");
}

std::vector<std::string_view> words_of(std::string_view line) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
    if (i > start) words.push_back(line.substr(start, i - start));
  }
  return words;
}

// The value, as the header will carry it: one trailing newline (\n or \r\n) taken off; nothing
// that could end the header line or smuggle another.
std::string header_value(std::string content) {
  if (!content.empty() && content.back() == '\n') content.pop_back();
  if (!content.empty() && content.back() == '\r') content.pop_back();
  if (content.empty()) throw std::runtime_error("its value file is empty");
  if (content.size() > kMaxValueBytes)
    throw std::runtime_error("its value is longer than " + std::to_string(kMaxValueBytes) +
                             " bytes");
  for (unsigned char c : content)
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      throw std::runtime_error(
          "its value holds a control character (a line break, say): a header value may not");
  if (content.front() == ' ' || content.front() == '\t' || content.back() == ' ' ||
      content.back() == '\t')
    throw std::runtime_error("its value starts or ends with white space");
  return content;
}

std::shared_ptr<const egress::HeaderSecret> parse_line(std::string_view line,
                                                       const std::string& directory,
                                                       const ValueReader& read_value) {
  auto words = words_of(line);
  auto secret = std::make_shared<egress::HeaderSecret>();
  const std::string_view name = words.front();
  if (name.size() > kMaxNameBytes)
    throw std::runtime_error("a secret's name is at most " + std::to_string(kMaxNameBytes) +
                             " characters");
  for (char c : name)
    if (!is_name_char(c))
      throw std::runtime_error("a secret's name may hold letters, digits, '_', '-' and '.' only");
  if (name.find('=') != std::string_view::npos || words.size() == 1)
    throw std::runtime_error(
        "expected '<name> host=<host[:port]> header=<Header-Name> file=<path>'");
  secret->name = std::string(name);
  std::string host, header, file, plain;
  for (std::size_t i = 1; i < words.size(); ++i) {
    auto eq = words[i].find('=');
    std::string_view key = words[i].substr(0, eq);
    std::string value(eq == std::string_view::npos ? "" : words[i].substr(eq + 1));
    std::string* slot = key == "host"     ? &host
                        : key == "header" ? &header
                        : key == "file"   ? &file
                        : key == "plain"  ? &plain
                                          : nullptr;
    if (slot == nullptr)
      throw std::runtime_error("word " + std::to_string(i + 1) +
                               " is not host=, header=, file= or plain=");
    if (!slot->empty()) throw std::runtime_error(std::string(key) + "= given twice");
    if (value.empty()) throw std::runtime_error(std::string(key) + "= is empty");
    *slot = std::move(value);
  }
  for (const auto& [key, value] : {std::pair{"host", &host}, {"header", &header}, {"file", &file}})
    if (value->empty()) throw std::runtime_error(std::string(key) + "= is missing");
  if (host.starts_with("*") || host.find(',') != std::string::npos)
    throw std::runtime_error("host= must name one host (no wildcard, no list)");
  try {
    secret->destination = egress::AllowList::parse(host);
  } catch (const std::invalid_argument& e) {
    // "egress entry 1: why" without the entry: the reason alone.
    std::string why = e.what();
    auto colon = why.find(": ");
    throw std::runtime_error("host= " + (colon == std::string::npos ? why : why.substr(colon + 2)));
  }
  for (char c : header)
    if (!is_token_char(c)) throw std::runtime_error("header= is not a header field name");
  if (reserved_header(header))
    throw std::runtime_error(
        "header= names a header the proxy writes itself (Host, Content-Length, "
        "Transfer-Encoding, Connection, Keep-Alive, TE, Trailer, Upgrade, Expect, Proxy-*)");
  secret->header = header;
  if (!plain.empty() && plain != "yes" && plain != "no")
    throw std::runtime_error("plain= is yes or no");
  secret->plain_http = plain == "yes";
  std::string path = file.front() == '/' ? file : directory + "/" + file;
  secret->value = header_value(read_value(path));
  return secret;
}

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

}  // namespace

std::shared_ptr<const egress::HeaderSecret> SecretSet::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

void SecretSet::add(std::shared_ptr<const egress::HeaderSecret> secret) {
  std::string name = secret->name;
  by_name_.emplace(std::move(name), std::move(secret));
}

SecretSet parse_secrets(std::string_view text, const std::string& directory,
                        const ValueReader& read_value) {
  SecretSet out;
  std::vector<std::shared_ptr<const egress::HeaderSecret>> seen;
  int line_no = 0;
  while (!text.empty()) {
    ++line_no;
    auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto words = words_of(line);
    if (words.empty() || words.front().starts_with('#')) continue;
    try {
      auto secret = parse_line(line, directory, read_value);
      if (out.contains(secret->name))
        throw std::runtime_error("a secret of that name is on an earlier line");
      for (const auto& other : seen)
        if (other->destination.to_text() == secret->destination.to_text() &&
            iequals(other->header, secret->header))
          throw std::runtime_error("an earlier line sets the same header for the same host");
      seen.push_back(secret);
      out.add(std::move(secret));
    } catch (const std::runtime_error& e) {
      throw std::runtime_error("secrets file line " + std::to_string(line_no) + ": " + e.what());
    }
  }
  return out;
}

std::string read_private_file(const std::string& path, std::size_t max_bytes) {
  // The checks and the read are on one open file: a file swapped in between cannot slip by.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) throw_errno("cannot open " + path);
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw_errno("cannot stat " + path);
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(path + " is not a regular file");
  if (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH))
    throw std::runtime_error(path +
                             " may be read or written by its group or others (chmod 600 it)");
  std::string content;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("cannot read " + path);
    if (n == 0) break;
    content.append(chunk, static_cast<std::size_t>(n));
    if (content.size() > max_bytes)
      throw std::runtime_error(path + " is larger than " + std::to_string(max_bytes) + " bytes");
  }
  return content;
}

SecretSet load_secrets_file(const std::string& path) {
  std::string text = read_private_file(path, kMaxFileBytes);
  auto slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  return parse_secrets(text, directory, [](const std::string& value_path) {
    try {
      return read_private_file(value_path, kMaxValueBytes + 2);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("its value file: ") + e.what());
    }
  });
}

}  // namespace sandgate::secrets
