// examples/dse/Snakefile runs a sweep one point per job; its CSV must equal
// `gemini --dse --jobs 2` on the same space.
#include <doctest/doctest.h>

#include "support/error.hpp"
#include "testing.hpp"

using namespace cct;

TEST_CASE("Snakemake workflow: the same CSV rows as gemini --dse --jobs 2") {
  const std::string src = testing::source_dir();
  const std::string space = src + "/tests/dse/small_space.json";
  const std::string fir = src + "/examples/mappings/tiny_cnn_b4.fir.json";
  const std::string gemini = testing::bin_dir() + "/gemini";
  const std::string dir = testing::temp_dir("dse_snakemake");
  auto s = testing::run("cd " + dir + " && /usr/bin/snakemake -s " + src + "/examples/dse/Snakefile --cores 2 --quiet" +
                        " --config space=" + space + " nets=" + fir + " gemini=" + gemini + " out=results.csv 2>&1");
  REQUIRE_MESSAGE(s.exit_code == 0, s.out);
  auto r = testing::run_tool("gemini", "--dse " + space + " --nets " + fir + " --jobs 2 --no-progress -o " + dir +
                                           "/local.csv");
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::string a = testing::read_file(dir + "/results.csv"), b = testing::read_file(dir + "/local.csv");
  CHECK(a.size() > 1000);
  CHECK(a == b);
}
