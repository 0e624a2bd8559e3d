// RapidJSON's schema validator, to be included instead of <rapidjson/schema.h>
// everywhere (one definition of the hasher below per program).
//
// RapidJSON 1.1.0's internal::Hasher (values compared against "enum" and
// "uniqueItems") converts every double to a 64-bit integer, which is undefined
// behaviour for numbers beyond the integer range (UBSan: schema.h:180, "1e+308
// is outside the range of representable values of type 'unsigned long'"). This
// partial specialization for UTF-8, the only encoding we use, is RapidJSON's
// class (MIT licence) with that conversion guarded; the hashes of numbers in
// the integer range are unchanged, so 1 and 1.0 still match the same enum.
#pragma once

#include <rapidjson/document.h>
#include <rapidjson/internal/stack.h>

namespace rapidjson {
namespace internal {

template <typename Encoding, typename Allocator>
class Hasher;

template <typename Allocator>
class Hasher<UTF8<char>, Allocator> {
 public:
  typedef char Ch;

  Hasher(Allocator* allocator = 0, size_t stackCapacity = kDefaultSize) : stack_(allocator, stackCapacity) {}

  bool Null() { return WriteType(kNullType); }
  bool Bool(bool b) { return WriteType(b ? kTrueType : kFalseType); }
  bool Int(int i) { Number n; n.u.i = i; n.d = static_cast<double>(i); return WriteNumber(n); }
  bool Uint(unsigned u) { Number n; n.u.u = u; n.d = static_cast<double>(u); return WriteNumber(n); }
  bool Int64(int64_t i) { Number n; n.u.i = i; n.d = static_cast<double>(i); return WriteNumber(n); }
  bool Uint64(uint64_t u) { Number n; n.u.u = u; n.d = static_cast<double>(u); return WriteNumber(n); }
  bool Double(double d) {
    Number n;
    // The guard: outside [-2^63, 2^64) no integer can equal d, so any fixed
    // integer part will do (the double part still tells values apart).
    if (d < 0) n.u.i = d >= -9223372036854775808.0 ? static_cast<int64_t>(d) : 0;
    else n.u.u = d < 18446744073709551616.0 ? static_cast<uint64_t>(d) : 0;
    n.d = d;
    return WriteNumber(n);
  }

  bool RawNumber(const Ch* str, SizeType len, bool) {
    WriteBuffer(kNumberType, str, len * sizeof(Ch));
    return true;
  }
  bool String(const Ch* str, SizeType len, bool) {
    WriteBuffer(kStringType, str, len * sizeof(Ch));
    return true;
  }
  bool StartObject() { return true; }
  bool Key(const Ch* str, SizeType len, bool copy) { return String(str, len, copy); }
  bool EndObject(SizeType memberCount) {
    uint64_t h = Hash(0, kObjectType);
    uint64_t* kv = stack_.template Pop<uint64_t>(memberCount * 2);
    for (SizeType i = 0; i < memberCount; i++) h ^= Hash(kv[i * 2], kv[i * 2 + 1]);
    *stack_.template Push<uint64_t>() = h;
    return true;
  }
  bool StartArray() { return true; }
  bool EndArray(SizeType elementCount) {
    uint64_t h = Hash(0, kArrayType);
    uint64_t* e = stack_.template Pop<uint64_t>(elementCount);
    for (SizeType i = 0; i < elementCount; i++) h = Hash(h, e[i]);
    *stack_.template Push<uint64_t>() = h;
    return true;
  }

  bool IsValid() const { return stack_.GetSize() == sizeof(uint64_t); }
  uint64_t GetHashCode() const {
    RAPIDJSON_ASSERT(IsValid());
    return *stack_.template Top<uint64_t>();
  }

 private:
  static const size_t kDefaultSize = 256;
  struct Number {
    union U {
      uint64_t u;
      int64_t i;
    } u;
    double d;
  };

  bool WriteType(Type type) { return WriteBuffer(type, 0, 0); }
  bool WriteNumber(const Number& n) { return WriteBuffer(kNumberType, &n, sizeof(n)); }
  bool WriteBuffer(Type type, const void* data, size_t len) {
    uint64_t h = Hash(RAPIDJSON_UINT64_C2(0x84222325, 0xcbf29ce4), type);  // FNV-1a
    const unsigned char* d = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < len; i++) h = Hash(h, d[i]);
    *stack_.template Push<uint64_t>() = h;
    return true;
  }
  static uint64_t Hash(uint64_t h, uint64_t d) {
    static const uint64_t kPrime = RAPIDJSON_UINT64_C2(0x00000100, 0x000001b3);
    h ^= d;
    h *= kPrime;
    return h;
  }

  Stack<Allocator> stack_;
};

}  // namespace internal
}  // namespace rapidjson

#include <rapidjson/schema.h>
