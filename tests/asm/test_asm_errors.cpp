// Bad Scheduler IR: clear errors naming the file and the JSON pointer.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <string>

#include "arch/arch.hpp"
#include "asm/asm.hpp"
#include "fir/fir.hpp"
#include "sir/sir.hpp"
#include "support/error.hpp"
#include "testing.hpp"

namespace {

using namespace cct;

struct Inputs {
  sir::Schedule sched;
  fir::Graph graph;
  arch::Architecture arch;
};

Inputs load() {
  std::string dir = testing::reference_dir() + "/gemini-ir/";
  return {sir::read_sir(dir + "scheduler/int8_resnet34.sim_quantized_b1_c1_bw16_stschedule.json"),
          fir::read_fir(dir + "frontend/int8_resnet34.sim_quantized_b1.json"), arch::load_architecture("zebu-1core")};
}

// The message of the input error assemble() throws, "" if it does not throw one.
std::string error_of(const Inputs& in) {
  assembler::Options o;
  o.sir_file = "s.json";
  o.fir_file = "f.json";
  try {
    assembler::assemble(in.sched, in.graph, in.arch, o);
  } catch (const Error& e) {
    if (e.code() == kExitInvalidInput) return e.what();
    return std::string("wrong exit code: ") + e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a dangling transfer id names the workload") {
  Inputs in = load();
  in.sched.cores[0].workloads[1].ifmap[0].transfer_id = {999999};
  std::string e = error_of(in);
  CHECK(e.find("s.json: /0/1/buffer") == 0);
  CHECK(e.find("transfer 999999 is in no buffer") != std::string::npos);
}

TEST_CASE("a tensor outside L2") {
  Inputs in = load();
  in.sched.cores[0].workloads[2].buffer[0].address = in.arch.core.l2_bytes;
  std::string e = error_of(in);
  CHECK(e.find("s.json: /0/2/buffer/0/address") == 0);
  CHECK(e.find("outside L2") != std::string::npos);
}

TEST_CASE("a tile outside its buffer") {
  Inputs in = load();
  in.sched.cores[0].workloads[1].tile_info[0].ofmap_lower[1] = 100000000;
  std::string e = error_of(in);
  CHECK(e.find("s.json: /0/1/tile_info/tile_num_0") == 0);
  CHECK(e.find("outside its buffer") != std::string::npos);
}

TEST_CASE("a layer missing from the Frontend IR") {
  Inputs in = load();
  auto& layers = in.graph.mutable_layers();
  layers.erase(std::remove_if(layers.begin(), layers.end(), [](const fir::Layer& l) { return l.name == "Conv_5"; }),
               layers.end());
  in.graph.reindex();
  std::string e = error_of(in);
  CHECK(e.find("s.json: /") == 0);
  CHECK(e.find("\"Conv_5\" is not in the Frontend IR f.json") != std::string::npos);
}

TEST_CASE("a DRAM load without its DRAM tensor") {
  Inputs in = load();
  auto& out = in.sched.dram.out;
  out.erase(std::remove_if(out.begin(), out.end(), [](const sir::DramLoad& d) { return d.type == sir::DramLoadType::Fmap; }),
            out.end());
  std::string e = error_of(in);
  CHECK(e.find("s.json: /0/0/buffer") == 0);
  CHECK(e.find("DRAM source transfer") != std::string::npos);
}

TEST_CASE("the tool reports bad input with exit code 3") {
  std::string dir = testing::temp_dir("asm_errors");
  std::string ref = testing::reference_dir() + "/gemini-ir/";
  testing::write_file(dir + "/bad.json", "{\"xlen\": 1");
  auto r = testing::run_tool("asm", dir + "/bad.json --fir " + ref + "frontend/int8_resnet34.sim_quantized_b1.json --arch zebu-1core");
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("asm: ") == 0);
  auto m = testing::run_tool("asm", ref + "scheduler/int8_resnet34.sim_quantized_b1_c1_bw16_stschedule.json --fir " + ref +
                                        "frontend/int8_resnet50.sim_quantized_b1.json --arch zebu-1core");
  CHECK(m.exit_code == 3);
  CHECK(m.err.find("is not in the Frontend IR") != std::string::npos);
}
