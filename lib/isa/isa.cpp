#include "isa/isa.hpp"

#include <array>

namespace cct::isa {

namespace {

// --- Queues -----------------------------------------------------------------
constexpr std::array<std::string_view, kQueueCount> kQueueNames = {"CT", "LD", "LW", "PE", "VP",
                                                                   "DT", "ST", "SI", "SO"};

// --- Enumerations -----------------------------------------------------------
// Members as they appear in the reference programs (see formats/ISA_Format.md).
constexpr EnumMember kDataFmt[] = {{"INT8", 1}, {"FP16", 3}};
constexpr EnumMember kDataSign[] = {{"SIGNED", 1}};
constexpr EnumMember kFloat2Fixed[] = {{"CEIL", 0}, {"ROUND", 2}};
// CLIP and LEAKY_RELU: our extension (the PE epilogue's clamp to [0, ACTPM] and slope ACTPM).
constexpr EnumMember kActMode[] = {{"DISABLE", 0}, {"RELU", 1}, {"CLIP", 2}, {"LEAKY_RELU", 3}};
constexpr EnumMember kCMPS[] = {{"DEFAULT", 0}, {"MAX", 1}};
constexpr EnumMember kDefaultOnly[] = {{"DEFAULT", 0}};
constexpr EnumMember kXCutMode[] = {{"CUT_K", 3}};
// CUT_N (the batch axis) appears in the original's programs at batch 16 and 64.
constexpr EnumMember kYCutMode[] = {{"CUT_W", 0}, {"CUT_H", 1}, {"CUT_N", 2}, {"CUT_K", 3}, {"CUT_C", 4}};

struct EnumClassInfo {
  std::string_view name;
  std::span<const EnumMember> members;
};

constexpr std::array<EnumClassInfo, kEnumClassCount> kEnumClasses = {{
    {"DataFmt", kDataFmt},
    {"DataSign", kDataSign},
    {"Float2Fixed", kFloat2Fixed},
    {"ActMode", kActMode},
    {"CMPS", kCMPS},
    {"CMPD", kDefaultOnly},
    {"TREED", kDefaultOnly},
    {"ACCD", kDefaultOnly},
    {"SWRS", kDefaultOnly},
    {"SG0M", kDefaultOnly},
    {"SG1M", kDefaultOnly},
    {"MG0S", kDefaultOnly},
    {"SUMM", kDefaultOnly},
    {"QSMD", kDefaultOnly},
    {"XCutMode", kXCutMode},
    {"YCutMode", kYCutMode},
}};

// The typed enums in isa.hpp must agree with the table.
constexpr bool member_is(EnumClass c, std::string_view name, int32_t value) {
  for (const auto& m : kEnumClasses[static_cast<int>(c)].members)
    if (m.name == name) return m.value == value;
  return false;
}
static_assert(member_is(EnumClass::DataFmt, "INT8", static_cast<int32_t>(DataFmt::INT8)));
static_assert(member_is(EnumClass::DataFmt, "FP16", static_cast<int32_t>(DataFmt::FP16)));
static_assert(member_is(EnumClass::Float2Fixed, "ROUND", static_cast<int32_t>(Float2Fixed::ROUND)));
static_assert(member_is(EnumClass::Float2Fixed, "CEIL", static_cast<int32_t>(Float2Fixed::CEIL)));
static_assert(member_is(EnumClass::ActMode, "RELU", static_cast<int32_t>(ActMode::RELU)));
static_assert(member_is(EnumClass::ActMode, "CLIP", static_cast<int32_t>(ActMode::CLIP)));
static_assert(member_is(EnumClass::ActMode, "LEAKY_RELU", static_cast<int32_t>(ActMode::LEAKY_RELU)));
static_assert(member_is(EnumClass::CMPS, "MAX", static_cast<int32_t>(CMPS::MAX)));
static_assert(member_is(EnumClass::YCutMode, "CUT_C", static_cast<int32_t>(YCutMode::CUT_C)));
static_assert(member_is(EnumClass::YCutMode, "CUT_N", static_cast<int32_t>(YCutMode::CUT_N)));
static_assert(member_is(EnumClass::XCutMode, "CUT_K", static_cast<int32_t>(XCutMode::CUT_K)));

// --- Parameters -------------------------------------------------------------
constexpr std::array<std::string_view, kParamCount> kParamNames = {
#define CCT_X(name) #name,
    CCT_ISA_PARAMS(CCT_X)
#undef CCT_X
};

// --- Opcode parameter lists ---------------------------------------------------
using P = Param;
using EC = EnumClass;

constexpr ParamSpec I(P p) { return {p, ParamKind::Int, 0, {}, 0}; }
constexpr ParamSpec N(P p) { return {p, ParamKind::Number, 0, {}, 0}; }
constexpr ParamSpec B(P p) { return {p, ParamKind::Bool, 0, {}, 0}; }
constexpr ParamSpec E(P p, EC c) { return {p, ParamKind::Enum, 0, {c, c}, 0}; }
constexpr ParamSpec L(P p, uint8_t n) { return {p, ParamKind::IntList, n, {}, 0}; }
constexpr ParamSpec EL(P p, EC a, EC b) { return {p, ParamKind::EnumList, 2, {a, b}, 0}; }
constexpr ParamSpec PREV = {P::Prev_Insts, ParamKind::QueueList, 0, {}, 0};
constexpr ParamSpec NEXT = {P::Next_Insts, ParamKind::QueueList, 0, {}, 0};

// Storage cells: 64-bit scalars take two 32-bit cells, bools and enums one,
// list elements one each; queue lists live outside the cells.
constexpr int cells_of(const ParamSpec& s) {
  switch (s.kind) {
    case ParamKind::Int:
    case ParamKind::Number: return 2;
    case ParamKind::Bool:
    case ParamKind::Enum: return 1;
    case ParamKind::IntList:
    case ParamKind::EnumList: return s.length;
    case ParamKind::QueueList: return 0;
  }
  return 0;
}

template <size_t Count>
constexpr std::array<ParamSpec, Count> layout(std::array<ParamSpec, Count> ps) {
  int cell = 0;
  for (auto& s : ps) {
    s.cell = static_cast<uint8_t>(cell);
    cell += cells_of(s);
  }
  return ps;
}

template <size_t Count>
constexpr bool fits(const std::array<ParamSpec, Count>& ps) {
  int cells = 0;
  for (const auto& s : ps) {
    cells += cells_of(s);
    if ((s.kind == ParamKind::IntList || s.kind == ParamKind::EnumList) &&
        (s.length == 0 || s.length > kMaxListLength))
      return false;
  }
  return Count <= kMaxParams && cells <= kMaxCells;
}

#define CCT_DEFINE_PARAMS(op, ...)                              \
  constexpr auto k_##op = layout(std::array{__VA_ARGS__});      \
  static_assert(fits(k_##op), #op " exceeds the instruction storage");

CCT_DEFINE_PARAMS(ct_st, PREV, NEXT)
CCT_DEFINE_PARAMS(ct_bc, I(P::BCS), L(P::BufCut, 8), PREV, NEXT)
CCT_DEFINE_PARAMS(ct_ed, PREV, NEXT)
CCT_DEFINE_PARAMS(lda_cfg, I(P::SME), I(P::RS), I(P::BAS), E(P::DF, EC::DataFmt), L(P::STile, 3), L(P::DTile, 3))
CCT_DEFINE_PARAMS(lda_mov, I(P::RS), I(P::DBSG), I(P::STaddr), I(P::DTaddr), L(P::Tile, 4), PREV, NEXT)
CCT_DEFINE_PARAMS(ldw_cfg, I(P::RS), I(P::BAS), E(P::DF, EC::DataFmt), I(P::MKC), I(P::MKEN), L(P::SWsize, 3),
                  L(P::DWsize, 3))
CCT_DEFINE_PARAMS(ldw_mov, I(P::RS), I(P::DBSG), I(P::STaddr), I(P::DTaddr), L(P::Wsize, 4), PREV, NEXT)
CCT_DEFINE_PARAMS(lw_cfg, I(P::BAS), E(P::DF, EC::DataFmt), I(P::MKC), I(P::MKEN), L(P::SWsize, 3),
                  L(P::DWsize, 3))
CCT_DEFINE_PARAMS(lw_mov, I(P::SS), EL(P::XYmode, EC::XCutMode, EC::YCutMode), I(P::SBSG), I(P::STaddr),
                  I(P::DTaddr), L(P::Wsize, 4), PREV, NEXT)
CCT_DEFINE_PARAMS(pe_cfg_fm, E(P::IF, EC::DataSign), E(P::OF, EC::DataSign), E(P::SF, EC::DataFmt),
                  E(P::WF, EC::DataFmt), E(P::DF, EC::DataFmt), N(P::PADV), L(P::STile, 3), L(P::DTile, 3))
CCT_DEFINE_PARAMS(pe_cfg_pm, E(P::ACTMD, EC::ActMode), N(P::ACTPM), E(P::QC, EC::Float2Fixed), N(P::QB), N(P::QK),
                  I(P::ADDEN), L(P::STRIDE, 2), EL(P::XYmode, EC::XCutMode, EC::YCutMode))
CCT_DEFINE_PARAMS(pe_cfg_dq, I(P::DQC), N(P::DQB), N(P::DQK))
CCT_DEFINE_PARAMS(pe_cfg_tp, L(P::KERNEL, 2), L(P::Tile, 5), I(P::MTK0), I(P::MTC0), L(P::MTI, 2))
// Grouped and dilated convolutions (our extension, see formats/ISA_Format.md).
CCT_DEFINE_PARAMS(pe_cfg_gp, I(P::GROUPS), L(P::DILATION, 2))
CCT_DEFINE_PARAMS(pe_conv, I(P::PS), I(P::SPHI), I(P::SPWI), I(P::SBSG), I(P::DBSG), I(P::STaddr), I(P::SWaddr),
                  I(P::DTaddr), PREV, NEXT)
CCT_DEFINE_PARAMS(vp_cfg_gcs, E(P::CMPS, EC::CMPS), E(P::SG0M, EC::SG0M), I(P::CMPVS), I(P::SG0VS), N(P::SG0V),
                  N(P::CMPV))
CCT_DEFINE_PARAMS(vp_cfg_gms, B(P::USED), I(P::SEGE), I(P::SEGN), E(P::MG0S, EC::MG0S), E(P::SG1M, EC::SG1M),
                  I(P::MG0VS), I(P::SG1VS), N(P::SG1V), N(P::MG0V))
CCT_DEFINE_PARAMS(vp_cfg_sms, E(P::SUMM, EC::SUMM), I(P::MULVS), I(P::SUMVS), N(P::SUMV), N(P::MULV))
CCT_DEFINE_PARAMS(vp_cfg_qp, E(P::QCS, EC::Float2Fixed), E(P::QSMD, EC::QSMD), N(P::QB), N(P::QK))
CCT_DEFINE_PARAMS(vp_cfg_iq, I(P::IQCS), N(P::IQB0), N(P::IQK0))
CCT_DEFINE_PARAMS(vp_cfg_iq1, N(P::IQB1), N(P::IQK1))
CCT_DEFINE_PARAMS(vp_cfg_fm, E(P::IF, EC::DataSign), E(P::OF, EC::DataSign), E(P::IDF, EC::DataFmt),
                  E(P::ODF, EC::DataFmt), I(P::VF32), L(P::STile, 3), L(P::DTile, 3))
CCT_DEFINE_PARAMS(vp_cfg_tp, L(P::STRIDE, 2), L(P::KERNEL, 2), L(P::Tile, 3), I(P::T1F), I(P::T0F),
                  I(P::PADV_AREA))
// Our extension: the second operand's format and box (broadcast where a size
// is 1), and the parameters of the activation LUTs.
CCT_DEFINE_PARAMS(vp_cfg_fm1, E(P::IDF, EC::DataFmt), L(P::STile, 3))
CCT_DEFINE_PARAMS(vp_cfg_act, N(P::ACTPM), N(P::ACTPM1))
CCT_DEFINE_PARAMS(vp_self, I(P::IQEN), I(P::QEN), I(P::SHMD), I(P::GPMD), E(P::CMPD, EC::CMPD),
                  E(P::TREED, EC::TREED), E(P::ACCD, EC::ACCD), I(P::TM), E(P::SWRS, EC::SWRS), I(P::LUT),
                  I(P::SBSG), I(P::SBSG1), I(P::DBSG), I(P::STaddr), I(P::STaddr1), I(P::DTaddr), PREV, NEXT)
CCT_DEFINE_PARAMS(vp_pool, I(P::IQEN), I(P::QEN), I(P::SHMD), I(P::GPMD), E(P::CMPD, EC::CMPD),
                  E(P::TREED, EC::TREED), E(P::ACCD, EC::ACCD), E(P::SWRS, EC::SWRS), I(P::LUT), I(P::IPH),
                  I(P::IPW), I(P::SBSG), I(P::DBSG), I(P::STaddr), I(P::DTaddr), PREV, NEXT)
CCT_DEFINE_PARAMS(dt_cfg, E(P::DF, EC::DataFmt), L(P::STile, 3), L(P::DTile, 3))
CCT_DEFINE_PARAMS(dt_cal, I(P::Order), I(P::SBSG), I(P::DBSG), I(P::STaddr), I(P::DTaddr), L(P::Tile, 4), PREV,
                  NEXT)
CCT_DEFINE_PARAMS(sta_cfg, I(P::SME), I(P::RS), I(P::BAS), E(P::DF, EC::DataFmt), L(P::STile, 3), L(P::DTile, 3))
CCT_DEFINE_PARAMS(sta_mov, I(P::RS), I(P::SBSG), I(P::STaddr), I(P::DTaddr), L(P::Tile, 4), PREV, NEXT)
// Core-to-core transfers (our extension, see formats/ISA_Format.md).
CCT_DEFINE_PARAMS(so_cfg, E(P::DF, EC::DataFmt), L(P::STile, 3))
CCT_DEFINE_PARAMS(so_mov, I(P::DCORE), I(P::TAG), I(P::SBSG), I(P::STaddr), L(P::Tile, 4), PREV, NEXT)
CCT_DEFINE_PARAMS(si_cfg, E(P::DF, EC::DataFmt), L(P::DTile, 3))
CCT_DEFINE_PARAMS(si_mov, I(P::SCORE), I(P::TAG), I(P::DBSG), I(P::DTaddr), L(P::Tile, 4), PREV, NEXT)
// Resampling on the VP (our extension): the mode (int8::ResizeMode), the
// affine source coordinate o * RSK + RSB of each axis (for the padding modes
// the integer stride RSK and offset RSB), the input's size, and
// the layer coordinates of the tile's first output pixel and of the input
// pixel at STaddr.
CCT_DEFINE_PARAMS(vp_cfg_rs, I(P::RSMD), N(P::RSKH), N(P::RSKW), N(P::RSBH), N(P::RSBW), L(P::RSIN, 2), L(P::RSOO, 2),
                  L(P::RSIO, 2))
// Pooling windows (our extension): tap spacing, and the divisor of an
// average: 0 the constant MG0V, 1 the window's elements inside the box.
CCT_DEFINE_PARAMS(vp_cfg_pl, L(P::DILATION, 2), I(P::PLDIV))
// Host steps (our extension, see formats/ISA_Format.md): a core signals that
// its share of step TAG's inputs is in DRAM (ct_hs), and waits for the host
// to finish the step (ct_hw, which carries the step's work).
CCT_DEFINE_PARAMS(ct_hs, I(P::TAG), PREV, NEXT)
CCT_DEFINE_PARAMS(ct_hw, I(P::TAG), I(P::HOPS), I(P::HBYTES), PREV, NEXT)
// Multicast loads (our extension, see formats/ISA_Format.md): the unicast
// load's parameters after the group's TAG and its MEMBERS count (lw_mc always
// reads DRAM, so it has no SS).
CCT_DEFINE_PARAMS(lda_mc, I(P::TAG), I(P::MEMBERS), I(P::RS), I(P::DBSG), I(P::STaddr), I(P::DTaddr), L(P::Tile, 4),
                  PREV, NEXT)
CCT_DEFINE_PARAMS(ldw_mc, I(P::TAG), I(P::MEMBERS), I(P::RS), I(P::DBSG), I(P::STaddr), I(P::DTaddr), L(P::Wsize, 4),
                  PREV, NEXT)
CCT_DEFINE_PARAMS(lw_mc, I(P::TAG), I(P::MEMBERS), EL(P::XYmode, EC::XCutMode, EC::YCutMode), I(P::SBSG),
                  I(P::STaddr), I(P::DTaddr), L(P::Wsize, 4), PREV, NEXT)
#undef CCT_DEFINE_PARAMS

constexpr Queue queue_of(std::string_view mn) {
  std::string_view prefix = mn.substr(0, mn.find('_'));
  if (prefix == "ct") return Queue::CT;
  if (prefix == "lda" || prefix == "ldw") return Queue::LD;
  if (prefix == "lw") return Queue::LW;
  if (prefix == "pe") return Queue::PE;
  if (prefix == "vp") return Queue::VP;
  if (prefix == "dt") return Queue::DT;
  if (prefix == "sta") return Queue::ST;
  if (prefix == "si") return Queue::SI;
  if (prefix == "so") return Queue::SO;
  throw "mnemonic without a queue prefix";  // compile-time error in constant evaluation
}

template <size_t Count>
constexpr OpcodeInfo make_info(std::string_view mn, Opcode op, const std::array<ParamSpec, Count>& ps) {
  bool deps = false;
  for (const auto& s : ps) deps = deps || s.kind == ParamKind::QueueList;
  return {mn, op, queue_of(mn), mn.find("_cfg") != std::string_view::npos, deps, std::span<const ParamSpec>(ps)};
}

}  // namespace

namespace detail {
constexpr std::array<OpcodeInfo, kOpcodeCount> kOpcodeTable = {{
#define CCT_X(name) make_info(#name, Opcode::name, k_##name),
    CCT_ISA_OPCODES(CCT_X)
#undef CCT_X
}};

}  // namespace detail

namespace {
using detail::kOpcodeTable;
using IndexTable = std::array<std::array<int8_t, kParamCount>, kOpcodeCount>;
constexpr IndexTable make_index() {
  IndexTable t{};
  for (auto& row : t)
    for (auto& x : row) x = -1;
  for (const auto& info : kOpcodeTable)
    for (size_t i = 0; i < info.params.size(); ++i)
      t[static_cast<int>(info.op)][static_cast<int>(info.params[i].id)] = static_cast<int8_t>(i);
  return t;
}
}  // namespace

namespace detail {
constexpr IndexTable kParamIndex = make_index();
}  // namespace detail

std::string_view queue_name(Queue q) { return kQueueNames[static_cast<int>(q)]; }

std::optional<Queue> find_queue(std::string_view name) {
  for (int i = 0; i < kQueueCount; ++i)
    if (kQueueNames[i] == name) return static_cast<Queue>(i);
  return std::nullopt;
}

std::string_view enum_class_name(EnumClass c) { return kEnumClasses[static_cast<int>(c)].name; }

std::optional<EnumClass> find_enum_class(std::string_view name) {
  for (int i = 0; i < kEnumClassCount; ++i)
    if (kEnumClasses[i].name == name) return static_cast<EnumClass>(i);
  return std::nullopt;
}

std::span<const EnumMember> enum_members(EnumClass c) { return kEnumClasses[static_cast<int>(c)].members; }

const EnumMember* find_enum_member(EnumClass c, std::string_view name) {
  for (const auto& m : enum_members(c))
    if (m.name == name) return &m;
  return nullptr;
}

const EnumMember* find_enum_value(EnumClass c, int32_t value) {
  for (const auto& m : enum_members(c))
    if (m.value == value) return &m;
  return nullptr;
}

std::string_view param_name(Param p) { return kParamNames[static_cast<int>(p)]; }

std::optional<Param> find_param(std::string_view name) {
  for (int i = 0; i < kParamCount; ++i)
    if (kParamNames[i] == name) return static_cast<Param>(i);
  return std::nullopt;
}

std::string_view param_kind_name(ParamKind k) {
  switch (k) {
    case ParamKind::Int: return "integer";
    case ParamKind::Number: return "number";
    case ParamKind::Bool: return "boolean";
    case ParamKind::Enum: return "enum";
    case ParamKind::IntList: return "list of integers";
    case ParamKind::EnumList: return "list of enums";
    case ParamKind::QueueList: return "list of queue names";
  }
  return "?";
}

std::span<const OpcodeInfo> all_opcodes() { return detail::kOpcodeTable; }

std::optional<Opcode> find_opcode(std::string_view mnemonic) {
  for (const auto& info : detail::kOpcodeTable)
    if (info.mnemonic == mnemonic) return info.op;
  return std::nullopt;
}


}  // namespace cct::isa
