// Which addresses are not the public Internet (egress/address_policy): special IPv4 and IPv6
// ranges are named, public addresses are not.
#include "egress/address_policy.hpp"

#include <boost/asio/ip/address.hpp>
#include <catch2/catch.hpp>
#include <string>

using sandgate::egress::special_address;

namespace {

namespace ip = boost::asio::ip;

std::string special(const char* address) {
  return special_address(ip::make_address(address));
}

}  // namespace

TEST_CASE("special IPv4 addresses are named, public ones are not", "[unit][egress]") {
  struct Case {
    const char* address;
    const char* reason;
  };
  const std::string cgnat = "a shared (carrier-grade NAT) address";
  const std::string metadata = "a link-local address (cloud metadata)";
  for (const auto& [address, reason] : std::vector<Case>{
           {"0.0.0.0", "an unspecified address"},
           {"0.255.255.255", "an unspecified address"},
           {"10.0.0.1", "a private address"},
           {"10.255.255.255", "a private address"},
           {"172.16.0.1", "a private address"},
           {"172.31.255.255", "a private address"},
           {"192.168.0.1", "a private address"},
           {"100.64.0.1", cgnat.c_str()},
           {"100.127.255.255", cgnat.c_str()},
           {"127.0.0.1", "a loopback address"},
           {"127.255.255.254", "a loopback address"},
           {"169.254.169.254", metadata.c_str()},
           {"169.254.0.1", metadata.c_str()},
           {"168.63.129.16", "a cloud host address (Azure WireServer)"},
           {"192.0.0.8", "a reserved address"},
           {"192.0.2.1", "a reserved address"},
           {"198.18.0.1", "a reserved address"},
           {"198.19.255.255", "a reserved address"},
           {"198.51.100.7", "a reserved address"},
           {"203.0.113.9", "a reserved address"},
           {"224.0.0.1", "a multicast address"},
           {"239.255.255.250", "a multicast address"},
           {"240.0.0.1", "a reserved address"},
           {"255.255.255.255", "a reserved address"},
           // Public, some just outside the ranges above.
           {"8.8.8.8", ""},
           {"151.101.0.223", ""},
           {"1.1.1.1", ""},
           {"172.15.255.255", ""},
           {"172.32.0.0", ""},
           {"100.63.255.255", ""},
           {"100.128.0.0", ""},
           {"169.253.255.255", ""},
           {"198.17.255.255", ""},
           {"198.20.0.0", ""},
           {"192.0.1.1", ""},
           {"223.255.255.255", ""},
           {"11.0.0.0", ""},
       }) {
    INFO("address: " << address);
    CHECK(special(address) == std::string(reason));
  }
}

TEST_CASE("special IPv6 addresses are named, public ones are not", "[unit][egress]") {
  struct Case {
    const char* address;
    const char* reason;
  };
  const char* ula = "a private (unique local) address";
  const char* metadata = "a link-local address (cloud metadata)";
  for (const auto& [address, reason] : std::vector<Case>{
           {"::", "an unspecified address"},
           {"::1", "a loopback address"},
           // Judged by the IPv4 address they carry: mapped, compatible, NAT64, 6to4.
           {"::ffff:127.0.0.1", "a loopback address"},
           {"::ffff:169.254.169.254", metadata},
           {"::ffff:10.1.2.3", "a private address"},
           {"::ffff:0.0.0.0", "an unspecified address"},
           {"::127.0.0.1", "a loopback address"},
           {"::10.0.0.1", "a private address"},
           {"::2", "an unspecified address"},
           {"64:ff9b::a9fe:a9fe", metadata},
           {"64:ff9b::7f00:1", "a loopback address"},
           {"64:ff9b::c0a8:1", "a private address"},
           {"2002:7f00:1::1", "a loopback address"},
           {"2002:a9fe:a9fe::1", metadata},
           {"2002:c0a8:101::", "a private address"},
           {"2002:e000:1::", "a multicast address"},
           // IPv6's own ranges.
           {"fd00:ec2::254", ula},
           {"fc00::1", ula},
           {"fdff:ffff::1", ula},
           {"fe80::1", "a link-local address"},
           {"febf:ffff::1", "a link-local address"},
           {"fec0::1", "a private address"},
           {"feff::1", "a private address"},
           {"ff02::1", "a multicast address"},
           {"ff0e::101", "a multicast address"},
           {"2001:db8::1", "a reserved address"},
           {"2001:db8:ffff::1", "a reserved address"},
           {"100::1", "a reserved address"},
           {"100::ffff:ffff:ffff:ffff", "a reserved address"},
           {"2001:0:4136:e378:8000:63bf:3fff:fdd2", "a reserved address"},  // Teredo
           {"2001::1", "a reserved address"},
           {"3fff::1", "a reserved address"},
           {"2001:2::1", "a reserved address"},
           {"64:ff9b:1::a00:1", "a reserved address"},
           // Outside 2000::/3 (global unicast) is not the public Internet.
           {"::ffff:0:a00:1", "a reserved address"},
           {"1::1", "a reserved address"},
           {"4000::1", "a reserved address"},
           {"100:0:0:1::1", "a reserved address"},  // outside the discard /64, not outside ::/3
           // Public.
           {"2606:4700::1111", ""},
           {"2a04:4e42::223", ""},
           {"2001:4860:4860::8888", ""},
       }) {
    INFO("address: " << address);
    CHECK(special(address) == std::string(reason));
  }
  // The embedded IPv4 address decides when it is public.
  CHECK(special("::ffff:8.8.8.8").empty());
  CHECK(special("64:ff9b::808:808").empty());
  CHECK(special("2002:808:808::1").empty());
  CHECK(special("2001:200::1").empty());  // just above Teredo's /32
  CHECK(special("2001:db7:ffff::1").empty());
  CHECK(special("2001:db9::1").empty());
}
