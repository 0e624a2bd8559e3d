#include "irgen/spill.hpp"

namespace cct::irgen {

int spill_choice(const std::vector<KeptTensor>& candidates, int lo, int hi) {
  int best = -1, best_span = -1;
  for (const auto& t : candidates) {
    if (t.end < lo || hi < t.start) continue;
    const int span = t.end - t.start;
    if (span > best_span) best_span = span, best = t.id;
  }
  return best;
}

std::string over_capacity(const std::string& what, int64_t need, int64_t capacity, const std::string& buffer,
                          const arch::Architecture& a) {
  return what + " needs " + std::to_string(need) + " bytes, " + std::to_string(need - capacity) + " more than the " +
         std::to_string(capacity) + "-byte " + buffer + " of " + a.name;
}

}  // namespace cct::irgen
