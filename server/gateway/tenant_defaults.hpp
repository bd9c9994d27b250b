#pragma once
// What every tenant gets unless its tokens-file or OAuth policy line says otherwise: the
// --tenant-*, --budget-*, --egress-* and --spend-cap-usd flags, with the shares they leave unset
// worked out from the gateway's pools. The tokens file and the OAuth policy start each tenant
// from these.
#include "server/gateway/config.hpp"
#include "tenant/tenant_terms.hpp"

namespace sandgate::server {

tenant::TenantTerms tenant_defaults(const Config& config);

}  // namespace sandgate::server
