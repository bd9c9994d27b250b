// The egress byte caps of one sandbox (relay_bytes.hpp).
#include "egress/relay_bytes.hpp"

#include <utility>

namespace sandgate::egress {

std::string mib(std::uint64_t bytes) {
  return std::to_string(bytes >> 20) + " MiB";
}

RelayBytes::RelayBytes(std::shared_ptr<const TenantEgress> policy,
                       std::shared_ptr<RelayAccount> account)
    : policy_(std::move(policy)), account_(std::move(account)) {}

std::string RelayBytes::cap_reached() {
  sync_call();
  if (sandbox_bytes_ >= policy_->max_bytes_per_sandbox)
    return "this sandbox's egress byte cap (" + mib(policy_->max_bytes_per_sandbox) +
           ") is used up";
  if (call_bytes_ >= policy_->max_bytes_per_call)
    return "this call's egress byte cap (" + mib(policy_->max_bytes_per_call) +
           ") is used up; the next call may transfer again";
  return "";
}

std::string RelayBytes::charge(std::size_t n) {
  sync_call();
  // A chunk that would cross a cap is not relayed, and the cap counts as used up: the next
  // request is refused rather than given the few bytes left.
  if (sandbox_bytes_ + n > policy_->max_bytes_per_sandbox) {
    sandbox_bytes_ = policy_->max_bytes_per_sandbox;
    return "closed: the sandbox's egress byte cap";
  }
  if (call_bytes_ + n > policy_->max_bytes_per_call) {
    call_bytes_ = policy_->max_bytes_per_call;
    return "closed: the call's egress byte cap";
  }
  if (!account_->charge(n)) return "closed: the sandbox ended or reached its spend cap";
  sandbox_bytes_ += n;
  call_bytes_ += n;
  return "";
}

void RelayBytes::sync_call() {
  auto call = account_->call_number();
  if (call != call_number_) {
    call_number_ = call;
    call_bytes_ = 0;
  }
}

}  // namespace sandgate::egress
