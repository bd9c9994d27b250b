#include "egress/address_policy.hpp"

#include <array>
#include <cstdint>
#include <optional>

namespace sandgate::egress {

namespace {

namespace ip = boost::asio::ip;

constexpr const char* kUnspecified = "an unspecified address";
constexpr const char* kPrivate = "a private address";
constexpr const char* kLoopback = "a loopback address";
constexpr const char* kReserved = "a reserved address";
constexpr const char* kMulticast = "a multicast address";

struct V4Range {
  std::uint32_t network;
  int prefix;
  const char* reason;
};

constexpr std::uint32_t v4(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

// IANA's IPv4 special-purpose registry, the ranges a connection could reach something that is
// not the public Internet through (or go nowhere).
constexpr std::array kV4Ranges{
    V4Range{v4(0, 0, 0, 0), 8, kUnspecified},
    V4Range{v4(10, 0, 0, 0), 8, kPrivate},
    V4Range{v4(100, 64, 0, 0), 10, "a shared (carrier-grade NAT) address"},
    V4Range{v4(127, 0, 0, 0), 8, kLoopback},
    V4Range{v4(169, 254, 0, 0), 16, "a link-local address (cloud metadata)"},
    V4Range{v4(172, 16, 0, 0), 12, kPrivate},
    V4Range{v4(192, 0, 0, 0), 24, kReserved},
    V4Range{v4(192, 0, 2, 0), 24, kReserved},
    V4Range{v4(192, 168, 0, 0), 16, kPrivate},
    V4Range{v4(198, 18, 0, 0), 15, kReserved},
    V4Range{v4(198, 51, 100, 0), 24, kReserved},
    V4Range{v4(203, 0, 113, 0), 24, kReserved},
    V4Range{v4(224, 0, 0, 0), 4, kMulticast},
    V4Range{v4(240, 0, 0, 0), 4, kReserved},  // with 255.255.255.255, the broadcast
    // Not special to IANA, but to a cloud: Azure's WireServer (the VM agent's channel to the
    // host, reachable from every Azure VM). AWS, GCP and Alibaba use the ranges above.
    V4Range{v4(168, 63, 129, 16), 32, "a cloud host address (Azure WireServer)"},
};

bool in_v4_range(std::uint32_t address, const V4Range& range) {
  std::uint32_t mask = range.prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - range.prefix);
  return (address & mask) == range.network;
}

std::string special_v4(const ip::address_v4& address) {
  auto value = address.to_uint();
  for (const auto& range : kV4Ranges)
    if (in_v4_range(value, range)) return range.reason;
  return "";
}

using V6Bytes = ip::address_v6::bytes_type;

// An IPv6 prefix: its leading bytes (the rest zero) and its length in bits.
struct V6Prefix {
  V6Bytes bytes;
  int bits;
};

bool has_prefix(const V6Bytes& bytes, const V6Prefix& prefix) {
  for (int bit = 0; bit < prefix.bits; bit += 8) {
    int take = prefix.bits - bit < 8 ? prefix.bits - bit : 8;
    auto mask = static_cast<unsigned char>(0xff << (8 - take));
    if ((bytes[bit / 8] & mask) != (prefix.bytes[bit / 8] & mask)) return false;
  }
  return true;
}

std::string special_embedded_v4(const V6Bytes& bytes, int offset) {
  return special_v4(ip::address_v4(ip::address_v4::bytes_type{
      bytes[offset], bytes[offset + 1], bytes[offset + 2], bytes[offset + 3]}));
}

constexpr V6Prefix kMapped{{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff}, 96};
constexpr V6Prefix kCompatible{{}, 96};
constexpr V6Prefix kNat64{{0, 0x64, 0xff, 0x9b}, 96};
constexpr V6Prefix k6to4{{0x20, 0x02}, 16};
constexpr V6Prefix kGlobalUnicast{{0x20}, 3};

// Addresses that carry the IPv4 address a connection ends up at (mapped, compatible, NAT64,
// 6to4) are judged by it; nullopt when `bytes` is none of them.
std::optional<std::string> special_translated(const V6Bytes& bytes) {
  if (has_prefix(bytes, kMapped) || has_prefix(bytes, kCompatible) || has_prefix(bytes, kNat64))
    return special_embedded_v4(bytes, 12);
  if (has_prefix(bytes, k6to4)) return special_embedded_v4(bytes, 2);
  return std::nullopt;
}

struct V6Range {
  V6Prefix prefix;
  const char* reason;
};

constexpr std::array kV6Ranges{
    V6Range{{{0x20, 0x01, 0x0d, 0xb8}, 32}, kReserved},  // documentation
    V6Range{{{0x3f, 0xff}, 20}, kReserved},              // documentation (RFC 9637)
    V6Range{{{0x20, 0x01, 0x00, 0x02}, 48}, kReserved},  // benchmarking, as 198.18.0.0/15
    // Teredo: it tunnels to an IPv4 address it carries obfuscated.
    V6Range{{{0x20, 0x01, 0x00, 0x00}, 32}, kReserved},
    V6Range{{{0x01, 0x00}, 64}, kReserved},                    // discard
    V6Range{{{0, 0x64, 0xff, 0x9b, 0, 0x01}, 48}, kReserved},  // NAT64 for local use (RFC 8215)
    V6Range{{{0xfc}, 7}, "a private (unique local) address"},
    V6Range{{{0xfe, 0x80}, 10}, "a link-local address"},
    V6Range{{{0xfe, 0xc0}, 10}, kPrivate},  // site-local, deprecated
    V6Range{{{0xff}, 8}, kMulticast},
};

std::string special_v6(const ip::address_v6& address) {
  if (address.is_unspecified()) return kUnspecified;
  if (address.is_loopback()) return kLoopback;
  auto bytes = address.to_bytes();
  if (auto reason = special_translated(bytes)) return *reason;
  for (const auto& range : kV6Ranges)
    if (has_prefix(bytes, range.prefix)) return range.reason;
  // Global unicast is allocated from 2000::/3 only: anything else is not the public Internet.
  if (!has_prefix(bytes, kGlobalUnicast)) return kReserved;
  return "";
}

}  // namespace

std::string special_address(const ip::address& address) {
  return address.is_v4() ? special_v4(address.to_v4()) : special_v6(address.to_v6());
}

ip::address unmapped(const ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return ip::make_address_v4(ip::v4_mapped, address.to_v6());
  return address;
}

}  // namespace sandgate::egress
