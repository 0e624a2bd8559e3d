// The HTML view in headless Chromium, shared by the fast traceview tests and
// the slow ResNet-50 one: running the browser, reading what the page left in
// <body data-*>, and the page's #selftest, which hovers one instruction of
// every opcode with a mousemove event and keeps those tooltips in the DOM.
#pragma once

#include <doctest/doctest.h>

#include <cctype>
#include <filesystem>
#include <set>
#include <string>

#include "isa/isa.hpp"
#include "testing.hpp"
#include "trace/trace.hpp"

namespace html_check {

inline std::string chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    auto r = cct::testing::run(std::string("command -v ") + name);
    if (r.exit_code == 0 && !r.out.empty()) return r.out.substr(0, r.out.find('\n'));
  }
  FAIL("chromium is not installed; the HTML view is checked in headless Chromium. Install it with: "
       "apt-get install -y chromium (scripts/setup.sh does)");
  return "";
}

// Runs headless Chromium on a file URL with a fresh profile; `mode` is
// "--dump-dom" or "--screenshot=PATH". Console messages go to stderr.
inline cct::testing::RunResult headless(const std::string& url, const std::string& mode, const std::string& dir, int w = 1200,
                                        int h = 600) {
  static int n = 0;
  std::string profile = dir + "/profile" + std::to_string(n++);
  std::filesystem::remove_all(profile);
  std::filesystem::create_directories(profile);
  return cct::testing::run("HOME='" + profile + "' timeout 180 '" + chromium() +
                           "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking "
                           "--disable-component-update --disable-sync --disable-dev-shm-usage --user-data-dir='" + profile +
                           "' --enable-logging=stderr --v=0 --virtual-time-budget=15000 --window-size=" + std::to_string(w) +
                           "," + std::to_string(h) + " " + mode + " '" + url + "'");
}

inline std::string body_attr(const std::string& dom, const std::string& name) {
  auto b = dom.find("<body");
  if (b == std::string::npos) return "";
  auto e = dom.find('>', b);
  std::string tag = dom.substr(b, e - b);
  auto p = tag.find(name + "=\"");
  if (p == std::string::npos) return "";
  p += name.size() + 2;
  return tag.substr(p, tag.find('"', p) - p);
}

// The text of the tooltips the self-test hovered (HTML entities decoded).
inline std::string hovered_tooltips(const std::string& dom) {
  const std::string open = "<pre id=\"selftest-tips\" hidden=\"\">";
  auto p = dom.rfind(open);
  if (p == std::string::npos) return "";
  p += open.size();
  std::string raw = dom.substr(p, dom.find("</pre>", p) - p), text;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') { text += raw[i]; continue; }
    for (auto [ent, ch] : {std::pair{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}})
      if (raw.compare(i, std::char_traits<char>::length(ent), ent) == 0) {
        text += ch;
        i += std::char_traits<char>::length(ent) - 1;
        break;
      }
  }
  return text;
}

// The first "Name(123)" in text: an enum printed as its number.
inline std::string raw_enum_in(const std::string& text) {
  for (size_t p = text.find('('); p != std::string::npos; p = text.find('(', p + 1)) {
    if (p == 0 || !std::isalnum(static_cast<unsigned char>(text[p - 1]))) continue;
    size_t q = p + 1;
    if (q < text.size() && text[q] == '-') ++q;
    size_t digits = q;
    while (q < text.size() && std::isdigit(static_cast<unsigned char>(text[q]))) ++q;
    if (q > digits && q < text.size() && text[q] == ')') {
      size_t b = text.rfind('\n', p);
      return text.substr(b == std::string::npos ? 0 : b + 1, q + 1 - (b == std::string::npos ? 0 : b + 1));
    }
  }
  return "";
}

// Opens `html` (the view of trace t) at #selftest: no script error, no
// console error, one hovered tooltip per opcode in the trace, and every enum
// parameter printed by name (DataFmt.FP16), never as a number.
inline void check_hover_every_class(const std::string& html, const cct::trace::Trace& t, const std::string& dir) {
  using cct::isa::ParamKind;
  auto dom = headless("file://" + html + "#selftest", "--dump-dom", dir, 1600, 900);
  REQUIRE_MESSAGE(dom.exit_code == 0, dom.err);
  std::string console;  // the page's console lines among Chromium's own log
  for (size_t p = 0, e; p < dom.err.size(); p = e + 1) {
    e = dom.err.find('\n', p);
    if (e == std::string::npos) e = dom.err.size();
    std::string line = dom.err.substr(p, e - p);
    if (line.find(":CONSOLE(") != std::string::npos || line.find("Uncaught") != std::string::npos) console += line + "\n";
  }
  CAPTURE(console);
  CHECK(body_attr(dom.out, "data-status") == "ok");
  CHECK(body_attr(dom.out, "data-error") == "");
  REQUIRE(body_attr(dom.out, "data-selftest") == "ok");
  CHECK(console == "");  // nothing logged to the console at all
  std::set<cct::isa::Opcode> ops;
  for (const auto& inst : t.program.instructions) ops.insert(inst.op());
  CHECK(body_attr(dom.out, "data-hovered") == std::to_string(ops.size()));
  CHECK(body_attr(dom.out, "data-raw-enums") == "0");
  const std::string tips = hovered_tooltips(dom.out);
  size_t enum_params = 0;
  for (cct::isa::Opcode op : ops) {
    const std::string head = std::string(cct::isa::mnemonic(op)) + "   line ";
    auto at = tips.find(head);
    CAPTURE(head);
    REQUIRE(at != std::string::npos);
    const std::string tip = tips.substr(at, tips.find("\n\n", at) - at);
    for (const auto& p : cct::isa::opcode_info(op).params) {
      if (p.kind != ParamKind::Enum) continue;
      // "  DF: DataFmt.FP16": the class and a member name, not "DataFmt(12884901891)".
      std::string line = "\n  " + std::string(cct::isa::param_name(p.id)) + ": " +
                         std::string(cct::isa::enum_class_name(p.enums[0])) + ".";
      CAPTURE(line);
      CHECK(tip.find(line) != std::string::npos);
      ++enum_params;
    }
  }
  CHECK(enum_params > 0);
  CHECK(raw_enum_in(tips) == "");
}

}  // namespace html_check
