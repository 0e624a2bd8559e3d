#include "footprint/layout.hpp"

#include <cstring>

#include "support/int_math.hpp"

namespace cct::footprint {

int element_bytes(isa::DataFmt f) { return f == isa::DataFmt::FP16 ? 2 : 1; }

Box make_box(const arch::Architecture& a, std::span<const int32_t> chw, int elem, bool packed) {
  Box b;
  b.c = chw.size() > 0 ? chw[0] : 1;
  b.h = chw.size() > 1 ? chw[1] : 1;
  b.w = chw.size() > 2 ? chw[2] : 1;
  b.elem = elem;
  b.pixel = packed ? b.c * elem : round_up(b.c * elem, a.core.l2_channel_align_bytes);
  return b;
}

WeightRecord weight_record(const arch::Architecture& a, int64_t c, int64_t kh, int64_t kw, int elem) {
  WeightRecord r;
  r.c = c, r.kh = kh, r.kw = kw, r.elem = elem;
  r.cpad = round_up(c * elem, a.core.l2_channel_align_bytes);
  r.extra = a.core.weight_extra_bytes_per_out_channel;
  return r;
}

void pack_weights(const WeightRecord& r, const int8_t* k, const float* bias, const float* channel_scale, int64_t k_lo,
                  int64_t k_hi, std::vector<uint8_t>& out) {
  const int64_t count = k_hi - k_lo + 1;
  out.assign(static_cast<size_t>(count * r.bytes()), 0);
  const int64_t taps = r.kh * r.kw;
  for (int64_t k_out = 0; k_out < count; ++k_out) {
    const int64_t ch = k_lo + k_out;
    uint8_t* rec = out.data() + k_out * r.bytes();
    const int8_t* src = k + ch * r.c * taps;  // [C][kh][kw] of this channel
    for (int64_t c = 0; c < r.c; ++c)
      for (int64_t t = 0; t < taps; ++t) rec[t * r.cpad + c] = static_cast<uint8_t>(src[c * taps + t]);
    std::memcpy(rec + r.kernel_bytes() + kBiasOffset, &bias[ch], 4);
    std::memcpy(rec + r.kernel_bytes() + kChannelScaleOffset, &channel_scale[ch], 4);
  }
}

}  // namespace cct::footprint
