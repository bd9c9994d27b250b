#include "common/usd_text.hpp"

#include <cstdio>

namespace sandgate {

std::string usd_text(double usd) {
  char text[48];
  std::snprintf(text, sizeof text, usd >= 0.01 ? "$%.2f" : "$%.6f", usd);
  std::string s = text;
  while (usd < 0.01 && s.size() > 5 && s.back() == '0') s.pop_back();
  return s;
}

}  // namespace sandgate
