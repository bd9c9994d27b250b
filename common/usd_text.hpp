#pragma once
// An amount of US dollars as the model and the logs are told it.
#include <string>

namespace sandgate {

// Cents for an ordinary amount ("$1.50"); a tiny one (tests, a cautious tenant) keeps its
// digits ("$0.00001").
std::string usd_text(double usd);

}  // namespace sandgate
