// The accelerator ISA, defined once: instruction queues, enumerations,
// parameter names and the opcode table (mnemonic, queue, parameters in their
// written order and their kinds). Readers, writers, the validator, the JSON
// Schema generator, the assembler and the simulator all work from this table.
//
// formats/ISA_Format.md describes every entry in prose.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace cct::isa {

// ---------------------------------------------------------------------------
// Queues (instruction classes). Each core executes one in-order queue per
// class; Prev_Insts / Next_Insts name queues to synchronise with.
enum class Queue : uint8_t { CT, LD, LW, PE, VP, DT, ST, SI, SO };
inline constexpr int kQueueCount = 9;
// The largest size (tile, kernel, stride, group) the tools accept along one
// dimension of an instruction: far beyond any memory, small enough that the
// products the footprint and timing models form never overflow.
inline constexpr int64_t kMaxDimension = int64_t(1) << 20;
// A program begins with ct_st and one ct_bc per buffer-cut register (BCS
// 0..kBufferCutRegisters-1) and ends with ct_ed (ISA_Format.md, ct_bc).
inline constexpr int kBufferCutRegisters = 4;

std::string_view queue_name(Queue q);  // "CT", "LD", ...
std::optional<Queue> find_queue(std::string_view name);

// ---------------------------------------------------------------------------
// Enumerations that appear as parameter values, written <Class.NAME: value>
// (legacy) or "Class.NAME" (JSON Lines). Only members established from real
// programs are listed; anything else is an input error.
#define CCT_ISA_ENUM_CLASSES(X) \
  X(DataFmt) X(DataSign) X(Float2Fixed) X(ActMode) X(CMPS) X(CMPD) X(TREED) X(ACCD) X(SWRS) X(SG0M) X(SG1M) \
  X(MG0S) X(SUMM) X(QSMD) X(XCutMode) X(YCutMode)

enum class EnumClass : uint8_t {
#define CCT_X(name) name,
  CCT_ISA_ENUM_CLASSES(CCT_X)
#undef CCT_X
};
inline constexpr int kEnumClassCount = 0
#define CCT_X(name) +1
    CCT_ISA_ENUM_CLASSES(CCT_X)
#undef CCT_X
    ;

// Typed views of the same enumerations for code that builds or interprets
// instructions; values are the hardware encodings.
enum class DataFmt : int32_t { INT8 = 1, FP16 = 3 };
enum class DataSign : int32_t { SIGNED = 1 };
enum class Float2Fixed : int32_t { CEIL = 0, ROUND = 2 };
// CLIP and LEAKY_RELU are our extension (formats/ISA_Format.md, section 6).
enum class ActMode : int32_t { DISABLE = 0, RELU = 1, CLIP = 2, LEAKY_RELU = 3 };
enum class CMPS : int32_t { DEFAULT = 0, MAX = 1 };
enum class CMPD : int32_t { DEFAULT = 0 };
enum class TREED : int32_t { DEFAULT = 0 };
enum class ACCD : int32_t { DEFAULT = 0 };
enum class SWRS : int32_t { DEFAULT = 0 };
enum class SG0M : int32_t { DEFAULT = 0 };
enum class SG1M : int32_t { DEFAULT = 0 };
enum class MG0S : int32_t { DEFAULT = 0 };
enum class SUMM : int32_t { DEFAULT = 0 };
enum class QSMD : int32_t { DEFAULT = 0 };
enum class XCutMode : int32_t { CUT_K = 3 };
// CUT_N: the original's programs at batch 16 and 64 (formats/ISA_Format.md, section 6).
enum class YCutMode : int32_t { CUT_W = 0, CUT_H = 1, CUT_N = 2, CUT_K = 3, CUT_C = 4 };

// vp_self / vp_pool LUT codes: the VP operation. 16, 17, 18 and 56 are the
// reference programs'; the others are our extension (formats/ISA_Format.md,
// section 9.5). Operand A is read at STaddr1 in the vp_cfg_fm box, operand B
// at STaddr in the vp_cfg_fm1 box; the activation functions take A times
// vp_cfg_gms MG0V and their parameters from vp_cfg_act.
enum class Lut : int32_t {
  Requantize = 16, MaxPool = 17, Add = 18, Sub = 19, Mul = 20, ReverseSub = 21,
  Relu = 32, Clip = 33, LeakyRelu = 34, Elu = 35, HardSigmoid = 36, HardSwish = 37, Sigmoid = 38, Silu = 39,
  Tanh = 40, Gelu = 41, PRelu = 42,
  AvgPool = 56,
  Resize = 57,  // vp_pool: resample the input box by vp_cfg_rs (our extension)
};

// The EnumClass of a typed enum, e.g. enum_class_of<DataFmt>() == EnumClass::DataFmt.
template <class E>
constexpr EnumClass enum_class_of();
#define CCT_X(name) \
  template <>       \
  constexpr EnumClass enum_class_of<name>() { return EnumClass::name; }
CCT_ISA_ENUM_CLASSES(CCT_X)
#undef CCT_X

struct EnumMember {
  std::string_view name;  // "INT8"
  int32_t value;          // 1
};

std::string_view enum_class_name(EnumClass c);  // "DataFmt"
std::optional<EnumClass> find_enum_class(std::string_view name);
std::span<const EnumMember> enum_members(EnumClass c);
const EnumMember* find_enum_member(EnumClass c, std::string_view name);
const EnumMember* find_enum_value(EnumClass c, int32_t value);

// ---------------------------------------------------------------------------
// Parameter names, shared by all opcodes (STaddr means the same everywhere).
#define CCT_ISA_PARAMS(X)                                                                                          \
  X(BCS) X(BufCut) X(Order) X(SME) X(RS) X(BAS) X(DF) X(STile) X(DTile) X(Tile) X(SBSG) X(SBSG1) X(DBSG)          \
  X(STaddr) X(STaddr1) X(DTaddr) X(SWaddr) X(MKC) X(MKEN) X(SWsize) X(DWsize) X(Wsize) X(SS) X(XYmode) X(DQC)     \
  X(DQB) X(DQK) X(IF) X(OF) X(SF) X(WF) X(PADV) X(ACTMD) X(ACTPM) X(QC) X(QB) X(QK) X(ADDEN) X(STRIDE) X(KERNEL) \
  X(MTK0) X(MTC0) X(MTI) X(PS) X(SPHI) X(SPWI) X(IDF) X(ODF) X(VF32) X(CMPS) X(SG0M) X(CMPVS) X(SG0VS) X(SG0V)    \
  X(CMPV) X(USED) X(SEGE) X(SEGN) X(MG0S) X(SG1M) X(MG0VS) X(SG1VS) X(SG1V) X(MG0V) X(SUMM) X(MULVS) X(SUMVS)     \
  X(SUMV) X(MULV) X(QCS) X(QSMD) X(IQCS) X(IQB0) X(IQK0) X(IQB1) X(IQK1) X(T1F) X(T0F) X(PADV_AREA) X(IQEN)       \
  X(QEN) X(SHMD) X(GPMD) X(CMPD) X(TREED) X(ACCD) X(TM) X(SWRS) X(LUT) X(IPH) X(IPW) X(DCORE) X(SCORE) X(TAG)     \
  X(GROUPS) X(DILATION) X(ACTPM1) X(RSMD) X(RSKH) X(RSKW) X(RSBH) X(RSBW) X(RSIN) X(RSOO) X(RSIO) X(PLDIV) X(HOPS)  \
  X(HBYTES) X(MEMBERS) X(Prev_Insts) X(Next_Insts)

enum class Param : uint8_t {
#define CCT_X(name) name,
  CCT_ISA_PARAMS(CCT_X)
#undef CCT_X
};
inline constexpr int kParamCount = 0
#define CCT_X(name) +1
    CCT_ISA_PARAMS(CCT_X)
#undef CCT_X
    ;

std::string_view param_name(Param p);
std::optional<Param> find_param(std::string_view name);

// ---------------------------------------------------------------------------
// Opcodes. The prefix of a mnemonic names its queue.
#define CCT_ISA_OPCODES(X)                                                                                      \
  X(ct_st) X(ct_bc) X(ct_ed) X(lda_cfg) X(lda_mov) X(ldw_cfg) X(ldw_mov) X(lw_cfg) X(lw_mov) X(pe_cfg_fm)       \
  X(pe_cfg_pm) X(pe_cfg_dq) X(pe_cfg_tp) X(pe_cfg_gp) X(pe_conv) X(vp_cfg_gcs) X(vp_cfg_gms) X(vp_cfg_sms)      \
  X(vp_cfg_qp) X(vp_cfg_iq) X(vp_cfg_iq1) X(vp_cfg_fm) X(vp_cfg_tp) X(vp_cfg_fm1) X(vp_cfg_act) X(vp_self)      \
  X(vp_pool) X(dt_cfg) X(dt_cal) X(sta_cfg) X(sta_mov) X(so_cfg) X(so_mov) X(si_cfg) X(si_mov) X(vp_cfg_rs) X(vp_cfg_pl) \
  X(ct_hs) X(ct_hw) X(lda_mc) X(ldw_mc) X(lw_mc)

enum class Opcode : uint8_t {
#define CCT_X(name) name,
  CCT_ISA_OPCODES(CCT_X)
#undef CCT_X
};
inline constexpr int kOpcodeCount = 0
#define CCT_X(name) +1
    CCT_ISA_OPCODES(CCT_X)
#undef CCT_X
    ;

// How a parameter value is written and stored.
enum class ParamKind : uint8_t {
  Int,        // integer (64-bit)
  Number,     // integer or float; which one was written is kept (0 vs 0.0)
  Bool,       // True/False (legacy), true/false (JSON)
  Enum,       // one member of `enums[0]`
  IntList,    // exactly `length` integers (32-bit each)
  EnumList,   // exactly `length` enum members, element i of class enums[i]
  QueueList,  // Prev_Insts / Next_Insts: up to kMaxQueueList queue names
};
std::string_view param_kind_name(ParamKind k);  // "integer", "number", ...

inline constexpr int kMaxQueueList = 9;  // Prev_Insts / Next_Insts entries
inline constexpr int kMaxListLength = 8; // fixed-length int / enum lists
inline constexpr int kMaxParams = 20;    // parameters of one opcode
inline constexpr int kMaxCells = 32;     // 32-bit storage cells of one instruction

struct ParamSpec {
  Param id;
  ParamKind kind;
  uint8_t length;        // IntList / EnumList: the fixed element count; else 0
  EnumClass enums[2];    // Enum: enums[0]; EnumList: class of each element
  uint8_t cell;          // first storage cell (scalars take two cells, list elements one)
};

struct OpcodeInfo {
  std::string_view mnemonic;
  Opcode op;
  Queue queue;
  bool is_config;           // *_cfg*: sets state for later instructions of its queue
  bool has_deps;            // carries Prev_Insts / Next_Insts
  std::span<const ParamSpec> params;  // in written order
};

namespace detail {
// The tables, constant-initialised in isa.cpp; use the accessors below.
extern const std::array<OpcodeInfo, kOpcodeCount> kOpcodeTable;
extern const std::array<std::array<int8_t, kParamCount>, kOpcodeCount> kParamIndex;
}  // namespace detail

inline const OpcodeInfo& opcode_info(Opcode op) { return detail::kOpcodeTable[static_cast<int>(op)]; }
std::span<const OpcodeInfo> all_opcodes();
std::optional<Opcode> find_opcode(std::string_view mnemonic);
inline std::string_view mnemonic(Opcode op) { return opcode_info(op).mnemonic; }

// Position of p in op's parameter list, or -1 when op has no such parameter.
inline int param_index(Opcode op, Param p) { return detail::kParamIndex[static_cast<int>(op)][static_cast<int>(p)]; }

// Multicast loads (our extension, formats/ISA_Format.md section 5b): one
// DRAM read delivered to several cores, each of which holds one member
// instruction. On its own core a member is the unicast load it names here
// (lda_mc: lda_mov, ldw_mc: ldw_mov, lw_mc: lw_mov with SS = 1), with the
// same parameters and configuration.
inline bool is_multicast_load(Opcode op) {
  return op == Opcode::lda_mc || op == Opcode::ldw_mc || op == Opcode::lw_mc;
}
// The unicast load a member performs on its core; any other opcode itself.
inline Opcode unicast_load_of(Opcode op) {
  switch (op) {
    case Opcode::lda_mc: return Opcode::lda_mov;
    case Opcode::ldw_mc: return Opcode::ldw_mov;
    case Opcode::lw_mc: return Opcode::lw_mov;
    default: return op;
  }
}

}  // namespace cct::isa
