#pragma once
// A tenant's limits as written after its name, `key=value` words: on a tokens-file line and on
// an OAuth policy line alike (max_sessions=N, spend_cap_usd=X, max_concurrent_calls=N,
// max_sandboxes=N, budget_usd_per_day=X, budget_usd_per_month=X, egress=host[:port],...,
// egress_connections=N, egress_mb_per_call=N, egress_mb_per_sandbox=N).
#include <string>

#include "auth/token_store.hpp"

namespace sandgate::auth {

// Sets the field `option` names. Throws std::runtime_error saying `where` ("tokens file line 3")
// and which option is wrong, never what was written: a token pasted by mistake must not reach
// a log.
void apply_tenant_option(Tenant& tenant, const std::string& option, const std::string& where,
                         int option_no);

}  // namespace sandgate::auth
