// Small hand-written ISA programs (JSON Lines) for the simulator tests.
#pragma once

#include <string>
#include <vector>

#include "isa/program_io.hpp"

namespace cct::testing {

// One instruction line; `core` < 0 leaves the mapping key out.
inline std::string line(const std::string& mnemonic, const std::string& params, int core = -1, int slyr = 0,
                        int wkl = 0) {
  std::string map = "{\"slyr\": " + std::to_string(slyr) + ", \"clyr\": [], \"s_flyr\": 0, \"c_flyr\": [], \"wkl\": " +
                    std::to_string(wkl) + ", \"tile\": 0";
  if (core >= 0) map += ", \"core\": " + std::to_string(core);
  map += "}";
  return "[\"" + mnemonic + "\", " + map + ", {" + params + "}]\n";
}

inline std::string deps(const std::string& prev, const std::string& next) {
  return "\"Prev_Insts\": [" + prev + "], \"Next_Insts\": [" + next + "]";
}

// lda_cfg + lda_mov of a [1, c, h, w] INT8 block from DRAM to L2 `dst`.
inline std::string load(int core, int c, int h, int w, long dst, const std::string& prev = "",
                        const std::string& next = "") {
  std::string tile = std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w);
  return line("lda_cfg", "\"SME\": 1, \"RS\": 0, \"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"STile\": [" + tile +
                             "], \"DTile\": [" + tile + "]",
              core) +
         line("lda_mov", "\"RS\": 0, \"DBSG\": 0, \"STaddr\": 0, \"DTaddr\": " + std::to_string(dst) + ", \"Tile\": [1, " +
                             tile + "], " + deps(prev, next),
              core);
}

inline std::string store(int core, int c, int h, int w, long src, const std::string& prev = "",
                         const std::string& next = "") {
  std::string tile = std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w);
  return line("sta_cfg", "\"SME\": 1, \"RS\": 0, \"BAS\": 0, \"DF\": \"DataFmt.INT8\", \"STile\": [" + tile +
                             "], \"DTile\": [" + tile + "]",
              core) +
         line("sta_mov", "\"RS\": 0, \"SBSG\": 0, \"STaddr\": " + std::to_string(src) + ", \"DTaddr\": 0, \"Tile\": [1, " +
                             tile + "], " + deps(prev, next),
              core);
}

// so_cfg + so_mov on `from`, si_cfg + si_mov on `to`, tag `tag`.
inline std::string transfer(int from, int to, int tag, int c, int h, int w) {
  std::string tile = std::to_string(c) + ", " + std::to_string(h) + ", " + std::to_string(w);
  return line("so_cfg", "\"DF\": \"DataFmt.INT8\", \"STile\": [" + tile + "]", from) +
         line("so_mov", "\"DCORE\": " + std::to_string(to) + ", \"TAG\": " + std::to_string(tag) +
                            ", \"SBSG\": 0, \"STaddr\": 0, \"Tile\": [1, " + tile + "], " + deps("", ""),
              from) +
         line("si_cfg", "\"DF\": \"DataFmt.INT8\", \"DTile\": [" + tile + "]", to) +
         line("si_mov", "\"SCORE\": " + std::to_string(from) + ", \"TAG\": " + std::to_string(tag) +
                            ", \"DBSG\": 0, \"DTaddr\": 0, \"Tile\": [1, " + tile + "], " + deps("", ""),
              to);
}

inline isa::Program parse(const std::string& text, const std::string& file = "t.jsonl") {
  return isa::parse_program(text, file, true);
}

}  // namespace cct::testing
