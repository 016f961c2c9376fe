// SPDX-License-Identifier: Apache-2.0
// The traced program's environment, as a user sets it by hand with LD_PRELOAD: a value the
// library does not accept is told on stderr and changes nothing else, and GPUMEMTRACE_OUTPUT
// naming a directory puts the trace inside it, as `gpumemtrace run -o DIR` does.
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "tests/integration/traced_run_fixture.h"

namespace gmt::test {
namespace {

class Environment : public TracedRun {};

const std::vector<std::string> kOps = {"alloc:a:" + mib(4), "free:a", "alloc:b:" + mib(2)};

TEST_F(Environment, ASwitchWithAnotherValueIsToldAndTheProgramIsUnchanged) {
  const ProcessResult untraced = run_untraced("workload_runtime_shared", kOps);
  ASSERT_EQ(untraced.exit_code, 0) << untraced.err;
  const ProcessResult traced =
      run_traced("workload_runtime_shared", kOps,
                 {{"GPUMEMTRACE_DEBUG", "yes"}, {"GPUMEMTRACE_TORCH_BLOCKS", "off"}});
  EXPECT_EQ(traced.exit_code, untraced.exit_code);
  EXPECT_EQ(traced.out, untraced.out);
  EXPECT_EQ(traced.err, untraced.err +
                            "gpumemtrace: GPUMEMTRACE_DEBUG='yes' is not one of 0, 1; using 0\n"
                            "gpumemtrace: GPUMEMTRACE_TORCH_BLOCKS='off' is not one of 0, 1; "
                            "using 1\n");
  EXPECT_EQ(traces().size(), 1u);  // recording went on
}

TEST_F(Environment, OutputNamingADirectoryWritesTheDefaultNameInside) {
  for (const std::string suffix : {"", "/"}) {
    const std::string out = dir_ + "/traces" + (suffix.empty() ? "-plain" : "-slash");
    std::filesystem::create_directory(out);
    const ProcessResult r = run_traced("workload_runtime_shared", {"alloc:a:" + mib(1)},
                                       {{"GPUMEMTRACE_OUTPUT", out + suffix}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> names;
    for (const auto& entry : std::filesystem::directory_iterator(out))
      names.push_back(entry.path().filename().string());
    ASSERT_EQ(names.size(), 1u) << out;
    EXPECT_TRUE(names[0].starts_with("gpumemtrace.") && names[0].ends_with(".gmt")) << names[0];
    const std::string pid = names[0].substr(12, names[0].size() - 12 - 4);
    EXPECT_EQ(pid.find_first_not_of("0123456789"), std::string::npos) << names[0];
    EXPECT_FALSE(std::filesystem::exists(out + "." + pid)) << "written beside the directory";
    EXPECT_EQ(std::to_string(number(report({out + "/" + names[0]}), "traces.0.pid")), pid);
  }
}

// A command line of ~65,500 bytes: the process description holds what fits (16 KiB), marked as
// shortened, and every command reads the trace and its allocations. It made the whole trace
// unreadable ("no process description in the trace").
TEST_F(Environment, AHugeCommandLineIsShortenedNotTheTraceLost) {
  const std::string payload(65'500, 'x');
  const ProcessResult r =
      run_traced("workload_runtime_shared", {"device:0:" + payload, "alloc:a:" + mib(3)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string trace = only_trace();
  const ProcessResult info = cli({"info", "--json", trace});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const nlohmann::json rep = report({trace});
  const auto& argv = rep["traces"][0]["argv"];
  ASSERT_EQ(argv.size(), 3u) << argv.dump().substr(0, 200);
  std::size_t recorded = 0;
  for (std::size_t i = 0; i + 1 < argv.size(); ++i) recorded += argv[i].get<std::string>().size();
  EXPECT_EQ(recorded, 16384u);
  const std::size_t total = workload("workload_runtime_shared").size() + 9 + payload.size() +
                            ("alloc:a:" + mib(3)).size();
  EXPECT_EQ(argv[2], "[gpumemtrace: the command line is " + std::to_string(total) + " bytes; " +
                         std::to_string(total - 16384) + " of them are not recorded]");
  EXPECT_EQ(rep["devices"][0]["live_at_exit_bytes"], 3 * 1024 * 1024);
}

}  // namespace
}  // namespace gmt::test
