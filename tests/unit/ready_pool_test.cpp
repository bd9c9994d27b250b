// The pool of ready sandboxes' pure parts: which module names may be preloaded (they become
// Python source), the cell that imports them, and which requests a ready sandbox serves.
#include "sandbox/ready_pool.hpp"

#include <catch2/catch.hpp>

using namespace sandgate::sandbox;

TEST_CASE("only dotted Python module names may be preloaded", "[unit][pool]") {
  for (const char* good : {"numpy", "matplotlib.pyplot", "_private", "a1.b_2.c"})
    CHECK(preload_name_problem(good).empty());
  for (const char* bad : {"", "1abc", "a..b", ".a", "a.", "os; import sys", "a-b", "a b",
                          "__import__('os')", "a.1b", "x'"})
    CHECK_FALSE(preload_name_problem(bad).empty());
}

TEST_CASE("the preload cell imports the names given and cleans up after itself", "[unit][pool]") {
  auto cell = preload_cell({"numpy", "matplotlib.pyplot"});
  CHECK(cell.find("for _sg_module in ['numpy', 'matplotlib.pyplot', ]:") != std::string::npos);
  // Every name it binds is deleted again, and it refuses to leave files in /work.
  CHECK(cell.find("del _sg_importlib, _sg_os, _sg_tempfile, _sg_dir, _sg_saved, _sg_name, "
                  "_sg_value, _sg_module\n") != std::string::npos);
  CHECK(cell.find("if _sg_os.listdir('/work'):") != std::string::npos);
  // A name that is not a module name never reaches the source.
  CHECK(preload_cell({"os'); import evil; ('"}).find("evil") == std::string::npos);
  CHECK(preload_cell({}).find("for _sg_module in []:") != std::string::npos);
}

TEST_CASE("a ready sandbox serves requests that differ only in what the hand-over sets",
          "[unit][pool]") {
  Limits built;
  Limits wanted = built;
  wanted.spend_cap_usd = 0.25;
  wanted.lifetime = std::chrono::seconds(60);
  wanted.output_bytes = 4096;
  CHECK(pool_serves(built, wanted));
  for (auto change : {+[](Limits& l) { l.memory_bytes /= 2; }, +[](Limits& l) { l.cpus = 0.5; },
                      +[](Limits& l) { l.max_processes = 8; },
                      +[](Limits& l) { l.work_bytes *= 2; }, +[](Limits& l) { l.tmp_bytes = 1; }}) {
    Limits other = built;
    change(other);
    CHECK_FALSE(pool_serves(built, other));
  }
}
