#include "isa/line_schema.hpp"

#include <rapidjson/document.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "support/error.hpp"
#include "support/json_parse.hpp"
#include "support/json_rapid.hpp"
#include "support/rapid_schema.hpp"
#include "support/schema.hpp"

namespace cct::isa {

namespace {

struct Compiled {
  rapidjson::Document source;
  std::unique_ptr<rapidjson::SchemaDocument> schema;
};

// The whole schema and its per-mnemonic narrowings, each compiled on first
// use and kept for the life of the process.
struct SchemaSet {
  std::string name;
  rapidjson::Document source;
  std::unique_ptr<rapidjson::SchemaDocument> whole;
  std::array<int, kOpcodeCount> branch{};  // index into anyOf, -1 = none
  std::array<std::unique_ptr<Compiled>, kOpcodeCount> by_opcode;
};

std::mutex g_mu;

std::unique_ptr<SchemaSet> load_set(const std::string& name) {
  auto set = std::make_unique<SchemaSet>();
  set->name = name;
  set->branch.fill(-1);
  std::string text(schema_text(name));
  try {
    parse_rapidjson(set->source, text, name + ".schema.json");
  } catch (const Error& e) {
    throw Error(kExitInternal, std::string("embedded schema: ") + e.what());
  }
  if (!set->source.IsObject())
    throw Error(kExitInternal, "embedded schema " + name + " is not a JSON object");
  auto any = set->source.FindMember("anyOf");
  if (any == set->source.MemberEnd() || !any->value.IsArray()) return set;
  // Each branch names its mnemonic in items[0].enum[0].
  for (rapidjson::SizeType b = 0; b < any->value.Size(); ++b) {
    const auto& branch = any->value[b];
    auto items = branch.FindMember("items");
    if (items == branch.MemberEnd() || !items->value.IsArray() || items->value.Empty()) continue;
    const auto& first = items->value[0];
    auto en = first.FindMember("enum");
    if (en == first.MemberEnd() || !en->value.IsArray() || en->value.Size() != 1 || !en->value[0].IsString()) continue;
    if (std::optional<Opcode> op = find_opcode(en->value[0].GetString())) set->branch[static_cast<int>(*op)] = b;
  }
  return set;
}

SchemaSet& schema_set(const std::string& name) {
  static std::map<std::string, std::unique_ptr<SchemaSet>, std::less<>> cache;
  auto it = cache.find(name);
  if (it != cache.end()) return *it->second;
  return *cache.emplace(name, load_set(name)).first->second;
}

// The narrowed schema drops "anyOf" and merges the branch into the root
// tuple: where the branch constrains an element ({"enum": [mn]}, the
// parameters) its schema replaces the root's weaker one ("any mnemonic", "an
// object"); where it says {} the root's schema stays. Each element then
// satisfies both, exactly as root plus branch would. Parameter definitions of
// other mnemonics are dropped so compiling stays cheap.
std::unique_ptr<Compiled> narrow(const SchemaSet& set, int branch_index) {
  auto c = std::make_unique<Compiled>();
  auto& alloc = c->source.GetAllocator();
  c->source.CopyFrom(set.source, alloc);
  const auto& branch_items = set.source["anyOf"][static_cast<rapidjson::SizeType>(branch_index)]["items"];
  c->source.RemoveMember("anyOf");
  auto root_items = c->source.FindMember("items");
  if (root_items == c->source.MemberEnd() || !root_items->value.IsArray() ||
      root_items->value.Size() != branch_items.Size())
    throw Error(kExitInternal, "embedded schema " + set.name + ": anyOf branches do not match the root items");
  std::string keep;
  for (rapidjson::SizeType i = 0; i < branch_items.Size(); ++i) {
    const auto& b = branch_items[i];
    if (!b.IsObject() || b.MemberCount() == 0) continue;
    root_items->value[i].CopyFrom(b, alloc);
    auto r = b.FindMember("$ref");
    if (r != b.MemberEnd() && r->value.IsString()) keep = r->value.GetString();
  }
  auto defs = c->source.FindMember("definitions");
  if (defs != c->source.MemberEnd() && defs->value.IsObject()) {
    for (auto m = defs->value.MemberBegin(); m != defs->value.MemberEnd();) {
      std::string_view n(m->name.GetString(), m->name.GetStringLength());
      if (n.substr(0, 7) == "params_" && "#/definitions/" + std::string(n) != keep) {
        m = defs->value.EraseMember(m);
      } else {
        ++m;
      }
    }
  }
  c->schema = std::make_unique<rapidjson::SchemaDocument>(c->source);
  return c;
}

const rapidjson::SchemaDocument& compiled_for(const std::string& name, std::optional<Opcode> op) {
  std::lock_guard<std::mutex> lock(g_mu);
  SchemaSet& set = schema_set(name);
  if (op && set.branch[static_cast<int>(*op)] >= 0) {
    auto& c = set.by_opcode[static_cast<int>(*op)];
    if (!c) c = narrow(set, set.branch[static_cast<int>(*op)]);
    return *c->schema;
  }
  if (!set.whole) set.whole = std::make_unique<rapidjson::SchemaDocument>(set.source);
  return *set.whole;
}

}  // namespace

// Validators allocate a little state for every value (stacks, hashers for
// "enum"); a pool over a reused buffer, recreated per line, turns all of that
// into pointer bumps.
using PoolAllocator = rapidjson::MemoryPoolAllocator<rapidjson::CrtAllocator>;
using PoolValidator =
    rapidjson::GenericSchemaValidator<rapidjson::SchemaDocument, rapidjson::BaseReaderHandler<rapidjson::UTF8<>, void>,
                                      PoolAllocator>;

struct LineSchemaValidator::State {
  std::string name;
  std::array<const rapidjson::SchemaDocument*, kOpcodeCount> by_opcode{};
  const rapidjson::SchemaDocument* whole = nullptr;
  rapidjson::Document doc;
  JsonParser parser;
  alignas(16) char buffer[64 * 1024];
  explicit State(const std::string& n) : name(n) {}

  const rapidjson::SchemaDocument& schema(std::optional<Opcode> op) {
    const rapidjson::SchemaDocument*& slot = op ? by_opcode[static_cast<int>(*op)] : whole;
    if (!slot) slot = &compiled_for(name, op);
    return *slot;
  }
};

LineSchemaValidator::LineSchemaValidator(std::string_view schema_name)
    : state_(std::make_unique<State>(std::string(schema_name))) {}

LineSchemaValidator::~LineSchemaValidator() = default;

void LineSchemaValidator::validate(std::string_view json_line, std::optional<Opcode> op, const std::string& file,
                                   long line_no) {
  State& s = *state_;
  auto where = [&] { return file + ":" + std::to_string(line_no); };
  // Fast path: stream the line through the validator without building a DOM.
  {
    PoolAllocator pool(s.buffer, sizeof s.buffer);
    PoolValidator v(s.schema(op), &pool, 256, 256);
    RapidEvents<PoolValidator> events(v);
    if (s.parser.parse(json_line, file, events, line_no) && v.IsValid()) return;
  }
  // Slow path, only on failure: build the DOM and let the shared validator
  // name the JSON pointer and the expectation (or the parser the syntax error).
  parse_rapidjson(s.doc, json_line, where());
  validate_against_schema(s.doc, s.name, where());
  throw_input_error(where() + ": does not match schemas/" + s.name + ".schema.json");
}

namespace {
constexpr size_t kChunkLines = 8192;  // below this, threads cost more than they save
}

struct SchemaPass::Shared {
  std::string name;
  const std::string& file;
  std::vector<SchemaLine> pending;                // the chunk being filled
  std::deque<std::vector<SchemaLine>> chunks;     // complete chunks, by index
  std::vector<std::exception_ptr> errors;         // per chunk, once validated
  size_t next_chunk = 0;                          // first chunk not yet taken
  size_t first_failed = SIZE_MAX;                 // lowest chunk index known to fail
  bool closing = false;                           // no more chunks will come
  std::mutex mu;
  std::condition_variable ready;
  std::vector<std::thread> workers;
  Shared(std::string_view n, const std::string& f) : name(n), file(f) {}
};

SchemaPass::SchemaPass(std::string_view schema_name, const std::string& file)
    : shared_(std::make_unique<Shared>(schema_name, file)) {
  shared_->pending.reserve(kChunkLines);
}

SchemaPass::~SchemaPass() {
  Shared& s = *shared_;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.closing = true;
    s.first_failed = 0;  // nothing more is needed: workers stop at their next chunk
  }
  s.ready.notify_all();
  for (auto& t : s.workers) t.join();
}

void SchemaPass::add(std::string_view text, Opcode op, long line_no) {
  Shared& s = *shared_;
  s.pending.push_back({text, op, line_no});
  if (s.pending.size() >= kChunkLines) flush();
}

void SchemaPass::flush() {
  Shared& s = *shared_;
  if (s.pending.empty()) return;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.chunks.push_back(std::move(s.pending));
    s.errors.emplace_back();
  }
  s.pending = {};
  s.pending.reserve(kChunkLines);
  // The second chunk shows the input is large: start the workers then.
  if (s.workers.empty() && s.chunks.size() == 2) {
    unsigned hw = std::thread::hardware_concurrency();
    unsigned n = hw > 1 ? std::min(hw - 1, 7u) : 0;
    for (unsigned i = 0; i < n; ++i) s.workers.emplace_back([this] { work(); });
  }
  s.ready.notify_one();
}

// Takes chunks until none is left (or, once closing, until the queue is drained).
void SchemaPass::work() {
  Shared& s = *shared_;
  LineSchemaValidator validator(s.name);
  for (;;) {
    size_t index;
    const std::vector<SchemaLine>* chunk;  // deque elements stay put while others are appended
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.ready.wait(lock, [&] { return s.next_chunk < s.chunks.size() || s.closing; });
      if (s.next_chunk >= s.chunks.size()) return;  // closing and drained
      index = s.next_chunk++;
      if (index > s.first_failed) continue;         // an earlier chunk already failed
      chunk = &s.chunks[index];
    }
    std::exception_ptr error;
    try {
      for (const SchemaLine& l : *chunk) validator.validate(l.text, l.op, s.file, l.line_no);
    } catch (...) {
      error = std::current_exception();
    }
    if (error) {
      std::lock_guard<std::mutex> lock(s.mu);
      s.errors[index] = error;
      s.first_failed = std::min(s.first_failed, index);
    }
  }
}

void SchemaPass::finish() {
  Shared& s = *shared_;
  flush();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.closing = true;
  }
  s.ready.notify_all();
  work();  // the reader's thread helps with what is left
  for (auto& t : s.workers) t.join();
  s.workers.clear();
  // Chunks are in line order: the first failing chunk holds the first failing line.
  for (const auto& e : s.errors)
    if (e) std::rethrow_exception(e);
}

void validate_lines(std::string_view schema_name, std::span<const SchemaLine> lines, const std::string& file) {
  SchemaPass pass(schema_name, file);
  for (const SchemaLine& l : lines) pass.add(l.text, l.op, l.line_no);
  pass.finish();
}

}  // namespace cct::isa
