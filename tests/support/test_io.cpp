#include <doctest/doctest.h>

#include <filesystem>
#include <random>

#include <sys/resource.h>
#include <sys/stat.h>

#include "support/error.hpp"
#include "support/io.hpp"
#include "mutations.hpp"
#include "support/npy.hpp"
#include "testing.hpp"

namespace fs = std::filesystem;

TEST_CASE("zstd files are written and read transparently") {
  std::string dir = cct::testing::temp_dir("io_zstd");
  std::string data(100000, 'a');
  for (size_t i = 0; i < data.size(); i += 7) data[i] = static_cast<char>('a' + i % 26);
  cct::write_output(dir + "/x.txt.zst", data);
  std::string raw = cct::testing::read_file(dir + "/x.txt.zst");
  CHECK(cct::has_zstd_magic(raw));
  CHECK(raw.size() < data.size());
  CHECK(cct::read_input(dir + "/x.txt.zst") == data);
  // Magic, not the name, decides on input.
  fs::rename(dir + "/x.txt.zst", dir + "/renamed.txt");
  CHECK(cct::read_input(dir + "/renamed.txt") == data);
}

TEST_CASE("corrupt zstd input is an error, not a crash") {
  std::string good = cct::zstd_compress("hello world hello world hello world");
  std::string truncated = good.substr(0, good.size() - 3);
  CHECK_THROWS_AS(cct::zstd_decompress(truncated, "t.zst"), cct::Error);
  std::string garbage = good;
  garbage[6] ^= 0x55;
  garbage[8] ^= 0x55;
  CHECK_THROWS_AS(cct::zstd_decompress(garbage + "xxxxxxxxxx", "g.zst"), cct::Error);
}

namespace {

// At least `size` zero bytes of zstd data, as concatenated frames of 1 MiB
// each (a valid stream; only the first frame's size is declared), so neither
// the test nor the reader sees one frame header announcing the whole.
std::string zeros_zst(uint64_t size) {
  const std::string frame = cct::zstd_compress(std::string(1 << 20, '\0'), 1);
  std::string out;
  for (uint64_t done = 0; done < size; done += 1 << 20) out += frame;
  return out;
}

long peak_rss_kib() {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

}  // namespace

// Issue 20: a 2 GB bomb of 200 KB was inflated wholly (2,055 MB peak) before
// being refused. Now the output is counted before it is kept.
TEST_CASE("a zstd bomb is refused, naming the file, without taking its memory") {
  std::string dir = cct::testing::temp_dir("io_bomb");
  const long before = peak_rss_kib();
  const std::string path = dir + "/bomb.json.zst";
  {
    std::string bomb = zeros_zst(cct::kMaxDecompressedBytes + 1);
    CHECK(bomb.size() < (1 << 20));
    cct::testing::write_file(path, bomb);
  }
  try {
    cct::read_input(path);
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(e.code() == cct::kExitInvalidInput);
    CHECK(std::string(e.what()).find(path + ": zstd data decompresses to more than 1073741824 bytes") == 0);
  }
  // Far below the bomb's size (the old reader's peak was the whole output).
  CHECK(peak_rss_kib() - before < 256 * 1024);
  // The limit is exact.
  std::string two = zeros_zst(2 << 20);  // two frames, the first declaring 1 MiB
  CHECK(cct::zstd_decompress(two, "s.zst", 2 << 20) == std::string(2 << 20, '\0'));
  CHECK_THROWS_WITH_AS(cct::zstd_decompress(two, "s.zst", (2 << 20) - 1),
                       doctest::Contains("s.zst: zstd data decompresses to more than 2097151 bytes"), cct::Error);
  CHECK_THROWS_WITH_AS(cct::zstd_decompress(cct::zstd_compress(std::string(5000, 'x')), "d.zst", 4999),
                       doctest::Contains("d.zst: zstd data decompresses to 5000 bytes, more than 4999"), cct::Error);
}

TEST_CASE("an output set is written whole or not at all") {
  std::string dir = cct::testing::temp_dir("io_set");
  {
    cct::OutputSet out;
    out.add(dir + "/a.json", "a");
    out.add(dir + "/b.json.zst", "b");
    out.add("/dev/full", "c");  // a device: written after the files are complete, before their renames
    CHECK_THROWS_WITH_AS(out.commit(), doctest::Contains("/dev/full: cannot write"), cct::Error);
  }
  CHECK(fs::is_empty(dir));  // neither file nor temporary
  {
    cct::OutputSet out;
    out.add(dir + "/a.json", "a");
    out.add(dir + "/no/such/dir/b.json", "b");
    CHECK_THROWS_AS(out.commit(), cct::Error);
  }
  CHECK(fs::is_empty(dir));
  {
    cct::OutputSet out;
    out.add(dir + "/a.json", "a");
    std::string b = "b";
    out.add_view(dir + "/b.json.zst", b);
    out.commit();
  }
  CHECK(cct::read_input(dir + "/a.json") == "a");
  CHECK(cct::read_input(dir + "/b.json.zst") == "b");
  {
    cct::OutputSet dropped;  // never committed: nothing appears
    dropped.add(dir + "/c.json", "c");
  }
  CHECK(!fs::exists(dir + "/c.json"));
}

// Issue 20: outputs were created 0644 whatever the umask.
TEST_CASE("new outputs get the permissions the umask allows") {
  std::string dir = cct::testing::temp_dir("io_umask");
  const mode_t saved = umask(022);
  for (mode_t mask : {mode_t(077), mode_t(022), mode_t(002), mode_t(0)}) {
    CAPTURE(mask);
    umask(mask);
    std::string path = dir + "/out" + std::to_string(mask) + ".json";
    cct::write_output(path, "x");
    struct stat st {};
    REQUIRE(stat(path.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == (0666 & ~mask));
  }
  umask(saved);
}

TEST_CASE("missing input names the file") {
  try {
    cct::read_input("/nonexistent/file.json");
    FAIL("no error");
  } catch (const cct::Error& e) {
    CHECK(std::string(e.what()).find("/nonexistent/file.json: cannot open") == 0);
    CHECK(e.code() == cct::kExitIo);
  }
}

TEST_CASE("write_output replaces atomically and leaves no temp files") {
  std::string dir = cct::testing::temp_dir("io_atomic");
  cct::write_output(dir + "/out.json", "first");
  cct::write_output(dir + "/out.json", "second");
  CHECK(cct::testing::read_file(dir + "/out.json") == "second");
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) { (void)e; ++n; }
  CHECK(n == 1);
  CHECK_THROWS_AS(cct::write_output(dir + "/no/such/dir/out.json", "x"), cct::Error);
}

TEST_CASE("npy round trip and errors") {
  std::string dir = cct::testing::temp_dir("io_npy");
  auto a = cct::NpyArray::from_float({1.5f, -2.0f, 3.25f, 0.0f, 7.0f, 8.0f}, {2, 3});
  cct::write_npy(dir + "/a.npy", a);
  auto b = cct::read_npy(dir + "/a.npy");
  CHECK(b.shape == std::vector<int64_t>{2, 3});
  CHECK(b.to_float() == a.to_float());
  std::string raw = cct::testing::read_file(dir + "/a.npy");
  CHECK((raw.size() - 24) % 64 == 0);  // header padded to 64 bytes
  CHECK_THROWS_AS(cct::parse_npy(raw.substr(0, raw.size() - 5), "t.npy"), cct::Error);
  CHECK_THROWS_AS(cct::parse_npy("garbage", "g.npy"), cct::Error);
  CHECK(cct::half_to_float(cct::float_to_half(1.5f)) == 1.5f);
  CHECK(cct::half_to_float(cct::float_to_half(-0.333251953125f)) == -0.333251953125f);
}

TEST_CASE("mutated npy files are read or rejected with the file's name") {
  // Header mutations (digits in the shape, quotes, braces) and truncations:
  // a shape the data does not hold must be refused before anything is
  // allocated for it.
  std::vector<float> values(60);
  for (size_t i = 0; i < values.size(); ++i) values[i] = float(i) * 0.5f;
  for (const auto& a : {cct::NpyArray::from_float(values, {3, 4, 5})}) {
    const std::string raw = cct::serialize_npy(a);
    std::mt19937_64 rng(7);
    int errors = 0;
    for (int i = 0; i < 2000; ++i) {
      std::string bad = cct::testing::mutate(raw, rng);
      CAPTURE(i);
      try {
        auto b = cct::parse_npy(bad, "mutated.npy");
        CHECK(b.count() * b.item_size() == b.bytes.size());
        CHECK(b.bytes.size() <= bad.size());
      } catch (const cct::Error& e) {
        ++errors;
        CHECK(std::string(e.what()).rfind("mutated.npy", 0) == 0);
      }
    }
    CHECK(errors > 1000);
  }
}

TEST_CASE("writing to a device writes in place instead of replacing it") {
  cct::write_output("/dev/null", "discarded");
  struct stat st{};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  std::string dir = cct::testing::temp_dir("io_dir_target");
  CHECK_THROWS_AS(cct::write_output(dir, "x"), cct::Error);
}
