// SPDX-License-Identifier: Apache-2.0
// `gpumemtrace top`: watches running processes through their traces, read as they are written
// (analyzer/model/live_trace.h), and redraws a view every interval: per process and device the
// device-resident bytes now, by owning library and by kind, the framework's and NVML's and the
// driver's views, the high-water mark, the growth over the last minute, the top live sites, the
// open phases and the failed allocations. One frame (--once), JSON lines (--json), or an
// interactive terminal view (keys: s sort, d device, q quit).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <memory>
#include <set>
#include <sstream>

#include "analyzer/cli/command_support.h"
#include "analyzer/cli/commands.h"
#include "analyzer/model/leak_classes.h"
#include "analyzer/model/live_trace.h"
#include "analyzer/model/owner_library.h"
#include "analyzer/report/byte_size.h"
#include "analyzer/report/frame_policy.h"
#include "analyzer/report/stack_frames.h"

namespace gmt::analyzer {
namespace {

using Json = nlohmann::ordered_json;
namespace fs = std::filesystem;

constexpr uint64_t kGrowthWindowNs = 60'000'000'000;
constexpr std::size_t kSitesShown = 5;

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int sig) {
  g_signal = sig;
}

// A trace file's name: *.gmt, or *.gmt.<digits> (a name that was taken gets ".<pid>").
bool trace_name(const std::string& name) {
  const std::size_t at = name.rfind(".gmt");
  if (at == std::string::npos || at == 0) return false;
  const std::string rest = name.substr(at + 4);
  if (rest.empty()) return true;
  if (rest[0] != '.' || rest.size() == 1) return false;
  return std::all_of(rest.begin() + 1, rest.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The trace a running process writes: its open descriptors, then its mappings.
std::optional<std::string> trace_of_pid(int pid) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(proc + "/fd", ec)) {
    const fs::path target = fs::read_symlink(entry.path(), ec);
    if (!ec && trace_name(target.filename().string())) return target.string();
  }
  std::ifstream maps(proc + "/maps");
  for (std::string line; std::getline(maps, line);) {
    const std::size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.size() > 10 && path.ends_with(" (deleted)")) continue;
    if (trace_name(fs::path(path).filename().string())) return path;
  }
  return std::nullopt;
}

// Whether process `pid` of this host has ended (a zombie has).
bool process_gone(uint64_t pid) {
  if (pid == 0 || pid > INT32_MAX) return false;
  if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), {});
  const std::size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z';
}

// A file its writer has created but not yet given its header: empty, or zeros so far (the
// header page is written into a file already sized). Not yet a trace, but it may become one.
bool may_still_start(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  struct stat st {};
  char head[64] = {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  const ssize_t got = regular ? ::pread(fd, head, sizeof head, 0) : -1;
  ::close(fd);
  return got >= 0 && std::all_of(head, head + got, [](char c) { return c == 0; });
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

uint64_t monotonic_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}
uint64_t unix_ns() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// The frame to name a site by: the first frame in the user's code (frame_policy.h), else the
// leaf.
const SiteFrame* telling_frame(const std::vector<SiteFrame>& frames) {
  if (frames.empty()) return nullptr;
  return &frames[first_user_frame(frames).value_or(0)];
}

// A row of the live sites: a driver site, or a caching allocator's block site or free cache.
struct LiveSite {
  uint32_t stack = 0;
  uint64_t bytes = 0;
  uint64_t count = 0;
  int allocator = -1;  // format::BlockAllocator of a block or cache row; -1 for a driver site
  bool cache = false;
};

// What `ordinal` holds now by site, largest first: the driver's sites, less the segments of the
// caching allocators that report their blocks, whose live blocks by site and free cache stand
// in their place (which line grew the cache is an accident of it).
std::vector<LiveSite> live_sites(const TraceSummary& s, int ordinal) {
  std::vector<LiveSite> rows;
  for (const auto& [key, site] : s.sites) {
    if (site.device != ordinal || site.live_resident_bytes == 0) continue;
    const uint64_t segments = std::min(site.live_resident_bytes, site.framework_segment_bytes);
    const uint64_t count =
        site.live_resident_count - std::min(site.live_resident_count, site.framework_segment_count);
    if (site.live_resident_bytes > segments)
      rows.push_back({site.stack, site.live_resident_bytes - segments, count});
  }
  for (const auto& [key, block] : s.block_sites) {
    if (block.device == ordinal && block.live_bytes > 0)
      rows.push_back(
          {block.stack, block.live_bytes, block.live_count, static_cast<int>(block.allocator)});
  }
  for (const AllocatorUsage& a : s.allocators) {
    if (a.device == ordinal && a.reserved_bytes > a.allocated_bytes)
      rows.push_back({0, a.reserved_bytes - a.allocated_bytes, a.live_segments,
                      static_cast<int>(a.allocator), true});
  }
  std::sort(rows.begin(), rows.end(), [](const LiveSite& a, const LiveSite& b) {
    if (a.bytes != b.bytes) return a.bytes > b.bytes;
    if (a.cache != b.cache) return b.cache;
    return a.stack < b.stack;
  });
  return rows;
}

struct Watched {
  std::unique_ptr<LiveTrace> trace;
  ResolvedStacks stacks;  // symbolized once
  std::vector<std::string> warnings;
};

class Top {
 public:
  Top(const TopOptions& options) : options_(options), host_(this_host()) {}

  // Finds the traces to watch (directories are scanned again at every refresh, pids until
  // their trace is found); false with a message when a --pid names no traced process.
  bool discover(std::ostream& err) {
    for (const std::string& p : options_.paths) {
      std::error_code ec;
      if (fs::is_directory(p, ec)) {
        for (const auto& entry : fs::directory_iterator(p, ec)) {
          if (entry.is_regular_file(ec) && trace_name(entry.path().filename().string()))
            watch(entry.path().string());
        }
      } else {
        watch(p);
      }
    }
    bool ok = true;
    for (int pid : options_.pids) {
      if (found_pids_.count(pid)) continue;
      if (std::optional<std::string> path = trace_of_pid(pid)) {
        found_pids_.insert(pid);
        watch(*path);
      } else if (!reported_pids_.count(pid)) {
        reported_pids_.insert(pid);
        err << "gpumemtrace top: process " << pid
            << (process_gone(static_cast<uint64_t>(pid)) ? " does not exist"
                                                         : " has no trace open (is it traced?)")
            << "\n";
        ok = false;
      }
    }
    return ok;
  }

  void refresh() {
    for (auto& [path, w] : watched_) {
      if (!w.trace->refresh()) continue;
      std::vector<uint32_t> missing;
      for (const auto& [key, site] : w.trace->summary().sites) {
        if (site.live_resident_bytes > 0 && !w.stacks.count(site.stack))
          missing.push_back(site.stack);
      }
      for (const auto& [key, block] : w.trace->summary().block_sites) {
        if (block.live_bytes > 0 && !w.stacks.count(block.stack)) missing.push_back(block.stack);
      }
      std::sort(missing.begin(), missing.end());
      missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
      if (!missing.empty()) {
        ResolvedStacks more = resolve_stacks(w.trace->summary(), missing, w.warnings);
        for (uint32_t id : missing) w.stacks[id] = std::move(more[id]);
      }
    }
  }

  // The frame as JSON: what --json prints, and what the text view is drawn from.
  Json frame() {
    Json processes = Json::array();
    Json errors = Json::array();
    std::map<int, uint64_t> device_totals;
    uint64_t total_live = 0, total_failed = 0, running = 0;
    std::set<int> devices_seen;
    for (auto& [path, w] : watched_) {
      LiveTrace& t = *w.trace;
      if (!t.error().empty() && !t.described()) {
        errors.push_back({{"path", path}, {"error", t.error()}});
        continue;
      }
      const TraceSummary& s = t.summary();
      const std::string state = state_of(t);
      if (state == "running" || state == "starting") ++running;
      const bool local = s.host == host_;
      const uint64_t now_ns = state == "running" && local && t.mono_start_ns() > 0
                                  ? std::max(t.latest_time_ns(), monotonic_ns() - t.mono_start_ns())
                                  : t.latest_time_ns();
      Json p = {{"path", path},
                {"pid", s.pid},
                {"rank", s.rank ? Json(*s.rank) : Json(nullptr)},
                {"host", s.host},
                {"argv", s.argv},
                {"state", state},
                {"records", t.records_applied()},
                {"trace_time_ns", now_ns}};
      OwnerLibraryCache owners(s);
      uint64_t failed = s.failed_host_alloc_count;
      Json devices = Json::array();
      for (const auto& [ordinal, d] : s.devices) {
        devices_seen.insert(ordinal);
        failed += d.failed_alloc_count;
        if (device_filter_ && *device_filter_ != ordinal) continue;
        devices.push_back(device_json(t, w, owners, ordinal, d, now_ns));
        device_totals[ordinal] += d.live_bytes;
        total_live += d.live_bytes;
      }
      total_failed += failed;
      p["failed_alloc_count"] = failed;
      p["devices"] = std::move(devices);
      p["open_phases"] = t.open_phases();
      if (!t.stop_reason().empty()) p["stop_reason"] = t.stop_reason();
      processes.push_back(std::move(p));
    }
    sort_processes(processes);
    devices_ = std::vector<int>(devices_seen.begin(), devices_seen.end());
    Json totals_devices = Json::array();
    for (const auto& [ordinal, bytes] : device_totals)
      totals_devices.push_back({{"device", ordinal}, {"live_bytes", bytes}});
    Json frame = {{"time_unix_ns", unix_ns()},
                  {"sort", sort_name()},
                  {"device_filter", device_filter_ ? Json(*device_filter_) : Json(nullptr)},
                  {"processes", std::move(processes)},
                  {"totals",
                   {{"processes", watched_.size() - errors.size()},
                    {"running", running},
                    {"live_bytes", total_live},
                    {"failed_alloc_count", total_failed},
                    {"devices", std::move(totals_devices)}}}};
    if (!errors.empty()) frame["errors"] = std::move(errors);
    return frame;
  }

  // Whether anything is, or may still come, to watch: a trace read, or one still being created,
  // a directory (scanned again at every refresh), a --pid whose process lives but whose trace
  // is not found yet. Nothing: every file named is not a trace, and waiting will not change it.
  bool anything_to_watch() const {
    for (const std::string& p : options_.paths) {
      std::error_code ec;
      if (fs::is_directory(p, ec)) return true;
    }
    for (int pid : options_.pids) {
      if (!found_pids_.count(pid) && !process_gone(static_cast<uint64_t>(pid))) return true;
    }
    for (const auto& [path, w] : watched_) {
      if (w.trace->described() || w.trace->error().empty() || may_still_start(path)) return true;
    }
    return false;
  }

  // Names on `err`, once each, the files that cannot be read as traces: those that never will
  // be, or (`all`, when the watch ends) every one. True when one was ever named: the exit
  // status says so, as every other command's does.
  bool name_unreadable(std::ostream& err, bool all) {
    for (const auto& [path, w] : watched_) {
      const LiveTrace& t = *w.trace;
      if (t.error().empty() || t.described() || named_unreadable_.count(path)) continue;
      if (!all && may_still_start(path)) continue;
      named_unreadable_.insert(path);
      err << "gpumemtrace top: " << t.error() << "\n";
    }
    return !named_unreadable_.empty();
  }

  // Every process watched has ended (and there is one).
  bool all_ended(const Json& frame) const {
    if (frame["processes"].empty()) return false;
    for (const Json& p : frame["processes"]) {
      const std::string state = p["state"].get<std::string>();
      if (state == "running" || state == "starting") return false;
    }
    return true;
  }

  void cycle_sort() { sort_ = (sort_ + 1) % 3; }
  void cycle_device() {
    if (devices_.empty()) {
      device_filter_.reset();
      return;
    }
    if (!device_filter_) {
      device_filter_ = devices_.front();
      return;
    }
    auto it = std::upper_bound(devices_.begin(), devices_.end(), *device_filter_);
    if (it == devices_.end()) {
      device_filter_.reset();
    } else {
      device_filter_ = *it;
    }
  }

 private:
  void watch(const std::string& path) {
    std::error_code ec;
    const std::string key = fs::weakly_canonical(path, ec).string();
    const std::string& name = ec ? path : key;
    if (watched_.count(name)) return;
    watched_[name].trace = std::make_unique<LiveTrace>(name);
  }

  std::string state_of(const LiveTrace& t) const {
    if (!t.described()) return "starting";
    if (t.saw_end()) return "exited";
    if (!t.stop_reason().empty()) return "stopped";
    const TraceSummary& s = t.summary();
    if (s.host == host_ && process_gone(s.pid)) return "cut";
    return "running";
  }

  Json device_json(const LiveTrace& t, const Watched& w, OwnerLibraryCache& owners, int ordinal,
                   const DeviceSummary& d, uint64_t now_ns) const {
    const TraceSummary& s = t.summary();
    Json by_kind = Json::object();
    for (const auto& [kind, usage] : d.by_kind) {
      if (usage.live_bytes > 0)
        by_kind[std::string(format::memory_kind_name(kind))] = usage.live_bytes;
    }
    std::map<std::string, uint64_t> libraries;
    for (const auto& [key, site] : s.sites) {
      if (site.device != ordinal || site.live_resident_bytes == 0) continue;
      libraries[owners.of(site.stack)] += site.live_resident_bytes;
    }
    Json by_library = Json::object();
    std::vector<std::pair<std::string, uint64_t>> ordered(libraries.begin(), libraries.end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [name, bytes] : ordered) by_library[name] = bytes;
    std::vector<LiveSite> sites = live_sites(s, ordinal);
    Json top_sites = Json::array();
    for (std::size_t i = 0; i < sites.size() && i < kSitesShown; ++i) {
      const LiveSite& site = sites[i];
      auto it = w.stacks.find(site.stack);
      static const std::vector<SiteFrame> kNone;
      const std::vector<SiteFrame>& frames = it != w.stacks.end() ? it->second : kNone;
      const SiteFrame* shown = telling_frame(frames);
      std::string frame = shown ? frame_text(*shown) : std::string("(no stack)");
      if (site.cache) frame = std::string("(") + allocator_name(site.allocator) + " cache: free)";
      Json row = {{"bytes", site.bytes},
                  {"count", site.count},
                  {"library", site.allocator >= 0 ? std::string(allocator_name(site.allocator))
                                                  : owners.of(site.stack)},
                  {"frame", std::move(frame)},
                  {"frames", frames_json(site.cache ? kNone : frames)}};
      if (site.allocator >= 0) {
        row["allocator"] = allocator_name(site.allocator);
        row["level"] = site.cache ? "cache" : "block";
      }
      top_sites.push_back(std::move(row));
    }
    const uint64_t before =
        now_ns > kGrowthWindowNs ? t.live_bytes_at(ordinal, now_ns - kGrowthWindowNs) : 0;
    Json dj = {
        {"device", ordinal},
        {"live_bytes", d.live_bytes},
        {"live_count", d.live_count},
        {"peak_bytes", d.peak_bytes},
        {"peak_time_ns", d.peak_time_ns},
        {"growth_1m_bytes", static_cast<int64_t>(d.live_bytes) - static_cast<int64_t>(before)},
        {"alloc_count", d.alloc_count},
        {"free_count", d.free_count},
        {"failed_alloc_count", d.failed_alloc_count},
        {"by_kind", std::move(by_kind)},
        {"by_library", std::move(by_library)}};
    // The framework's figures: its block events where it reports them, else its latest
    // report. Never both added: the views take their framework figures from the same blocks.
    std::optional<uint64_t> allocated, reserved;
    const std::optional<ViewValues>& v = d.views_at_exit;
    for (const AllocatorUsage& a : s.allocators) {
      if (a.device != ordinal) continue;
      allocated = allocated.value_or(0) + a.allocated_bytes;
      reserved = reserved.value_or(0) + a.reserved_bytes;
    }
    if (!allocated && v) {
      allocated = v->framework_allocated_bytes;
      reserved = v->framework_reserved_bytes;
    }
    dj["framework_allocated_bytes"] = or_null(allocated);
    dj["framework_reserved_bytes"] = or_null(reserved);
    dj["nvml_process_bytes"] = v ? or_null(v->nvml_process_bytes) : Json(nullptr);
    dj["nvml_device_used_bytes"] = v ? or_null(v->nvml_device_used_bytes) : Json(nullptr);
    dj["nvml_device_total_bytes"] = v ? or_null(v->nvml_device_total_bytes) : Json(nullptr);
    dj["driver_used_bytes"] = v ? or_null(v->driver_used_bytes) : Json(nullptr);
    dj["driver_total_bytes"] = v ? or_null(v->driver_total_bytes) : Json(nullptr);
    dj["views_time_ns"] = v ? Json(v->time_ns) : Json(nullptr);
    dj["top_sites"] = std::move(top_sites);
    return dj;
  }

  const char* sort_name() const {
    static constexpr const char* kNames[] = {"now", "peak", "growth"};
    return kNames[sort_];
  }
  void sort_processes(Json& processes) const {
    auto key = [&](const Json& p) {
      int64_t sum = 0;
      for (const Json& d : p["devices"]) {
        if (sort_ == 0) sum += d["live_bytes"].get<int64_t>();
        if (sort_ == 1) sum += d["peak_bytes"].get<int64_t>();
        if (sort_ == 2) sum += d["growth_1m_bytes"].get<int64_t>();
      }
      return sum;
    };
    std::vector<Json> list(processes.begin(), processes.end());
    std::stable_sort(list.begin(), list.end(), [&](const Json& a, const Json& b) {
      const int64_t ka = key(a), kb = key(b);
      if (ka != kb) return ka > kb;
      return a["pid"].get<uint64_t>() < b["pid"].get<uint64_t>();
    });
    processes = Json(list);
  }

  TopOptions options_;
  std::string host_;
  std::map<std::string, Watched> watched_;
  std::set<int> found_pids_;
  std::set<int> reported_pids_;
  std::set<std::string> named_unreadable_;
  int sort_ = 0;
  std::optional<int> device_filter_;
  std::vector<int> devices_;
};

std::string bytes_or_dash(const Json& v) {
  return v.is_null() ? std::string("-") : human_bytes(v.get<uint64_t>());
}

std::string signed_bytes(int64_t v) {
  if (v == 0) return "0";
  return (v > 0 ? "+" : "-") + human_bytes(static_cast<uint64_t>(v > 0 ? v : -v));
}

std::string seconds(uint64_t ns) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(1) << static_cast<double>(ns) / 1e9 << " s";
  return s.str();
}

std::string command_of(const Json& p) {
  std::string text;
  for (const Json& a : p["argv"]) {
    if (!text.empty()) text += ' ';
    text += a.get<std::string>();
  }
  return printable(text.size() > 40 ? text.substr(0, 37) + "..." : text);
}

// The text view of a frame.
void write_text(const Json& frame, bool interactive, std::ostream& out) {
  const Json& totals = frame["totals"];
  out << "gpumemtrace top: " << totals["processes"].get<uint64_t>() << " process"
      << (totals["processes"].get<uint64_t>() == 1 ? "" : "es") << " ("
      << totals["running"].get<uint64_t>()
      << " running), sort: " << frame["sort"].get<std::string>() << ", device: "
      << (frame["device_filter"].is_null() ? std::string("all")
                                           : std::to_string(frame["device_filter"].get<int>()));
  if (interactive) out << "   [s] sort  [d] device  [q] quit";
  out << "\n\n";
  out << std::left << std::setw(8) << "PID" << std::setw(5) << "RANK" << std::setw(9) << "STATE"
      << std::right << std::setw(4) << "DEV" << std::setw(11) << "NOW" << std::setw(11) << "PEAK"
      << std::setw(10) << "PEAK AT" << std::setw(11) << "GROWTH 1m" << std::setw(11) << "FW ALLOC"
      << std::setw(11) << "FW RESV" << std::setw(11) << "NVML" << std::setw(11) << "DRIVER"
      << std::setw(7) << "FAILED"
      << "  COMMAND\n";
  for (const Json& p : frame["processes"]) {
    const std::string rank = p["rank"].is_null() ? "-" : std::to_string(p["rank"].get<int>());
    bool first = true;
    auto lead = [&](std::ostream& o) {
      o << std::left << std::setw(8) << (first ? std::to_string(p["pid"].get<uint64_t>()) : "")
        << std::setw(5) << (first ? rank : "") << std::setw(9)
        << (first ? p["state"].get<std::string>() : "") << std::right;
    };
    for (const Json& d : p["devices"]) {
      lead(out);
      out << std::setw(4) << d["device"].get<int>() << std::setw(11)
          << human_bytes(d["live_bytes"].get<uint64_t>()) << std::setw(11)
          << human_bytes(d["peak_bytes"].get<uint64_t>()) << std::setw(10)
          << seconds(d["peak_time_ns"].get<uint64_t>()) << std::setw(11)
          << signed_bytes(d["growth_1m_bytes"].get<int64_t>()) << std::setw(11)
          << bytes_or_dash(d["framework_allocated_bytes"]) << std::setw(11)
          << bytes_or_dash(d["framework_reserved_bytes"]) << std::setw(11)
          << bytes_or_dash(d["nvml_process_bytes"]) << std::setw(11)
          << bytes_or_dash(d["driver_used_bytes"]) << std::setw(7)
          << (first ? std::to_string(p["failed_alloc_count"].get<uint64_t>()) : "") << "  "
          << (first ? command_of(p) : "") << "\n";
      first = false;
    }
    if (first) {
      lead(out);
      out << std::setw(4) << "-" << std::setw(11) << "0" << std::setw(88)
          << std::to_string(p["failed_alloc_count"].get<uint64_t>()) << "  " << command_of(p)
          << "\n";
    }
  }
  out << std::left << std::setw(21) << "TOTAL" << std::right << std::setw(4) << "" << std::setw(11)
      << human_bytes(totals["live_bytes"].get<uint64_t>()) << std::setw(77) << "" << std::setw(7)
      << totals["failed_alloc_count"].get<uint64_t>() << "\n";
  for (const Json& d : totals["devices"]) {
    out << std::left << std::setw(21) << "" << std::right << std::setw(4) << d["device"].get<int>()
        << std::setw(11) << human_bytes(d["live_bytes"].get<uint64_t>()) << "\n";
  }
  // Details of the first process in the order chosen.
  if (!frame["processes"].empty()) {
    const Json& p = frame["processes"][0];
    out << "\npid " << p["pid"].get<uint64_t>() << " (" << p["state"].get<std::string>() << ", "
        << seconds(p["trace_time_ns"].get<uint64_t>()) << ")";
    if (!p["open_phases"].empty()) {
      out << "  phases:";
      for (const Json& ph : p["open_phases"])
        out << " [" << printable(ph.get<std::string>()) << "]";
    }
    out << "\n";
    for (const Json& d : p["devices"]) {
      out << "  device " << d["device"].get<int>() << "  by kind:";
      for (const auto& [kind, bytes] : d["by_kind"].items())
        out << " " << kind << " " << human_bytes(bytes.get<uint64_t>());
      out << "\n            by library:";
      for (const auto& [lib, bytes] : d["by_library"].items())
        out << " " << printable(lib) << " " << human_bytes(bytes.get<uint64_t>());
      out << "\n";
      for (const Json& site : d["top_sites"]) {
        out << "    " << std::right << std::setw(11) << human_bytes(site["bytes"].get<uint64_t>())
            << std::setw(6) << site["count"].get<uint64_t>() << "x  "
            << site["frame"].get<std::string>() << "  ["
            << printable(site["library"].get<std::string>()) << "]\n";
      }
    }
  }
  // Piped, the errors go to stderr (name_unreadable), where a script looks for them; on the
  // screen they are part of the view.
  if (interactive && frame.contains("errors")) {
    for (const Json& e : frame["errors"]) out << "\n" << printable(e["error"].get<std::string>());
    out << "\n";
  }
}

// The terminal in raw mode while the view runs: restored on every way out.
class RawTerminal {
 public:
  RawTerminal() {
    if (::tcgetattr(STDIN_FILENO, &saved_) != 0) return;
    termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG kept: Ctrl-C is SIGINT
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    active_ = ::tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
  }
  ~RawTerminal() {
    if (active_) ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
  }
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

 private:
  termios saved_{};
  bool active_ = false;
};

}  // namespace

int top_command(const TopOptions& options, std::ostream& out, std::ostream& err) {
  Top top(options);
  if (!top.discover(err) && options.paths.empty()) return 1;
  top.refresh();
  // Named files that are not traces, and nothing else: an error, not a watch of nothing.
  if (!top.anything_to_watch()) {
    top.name_unreadable(err, true);
    return 1;
  }
  const bool interactive = !options.once && !options.json && ::isatty(STDOUT_FILENO) != 0;
  const int interval_ms = static_cast<int>(std::max(0.05, options.interval) * 1000);

  struct sigaction action {};
  struct sigaction old_int {
  }, old_term{};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: poll() returns at once
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  std::optional<RawTerminal> raw;
  if (interactive) {
    raw.emplace();
    out << "\x1b[?1049h\x1b[?25l" << std::flush;  // the alternate screen, no cursor
  }
  while (g_signal == 0) {
    top.discover(err);
    top.refresh();
    Json frame = top.frame();
    if (options.json) {
      out << frame.dump() << "\n" << std::flush;
    } else if (interactive) {
      std::ostringstream text;
      write_text(frame, true, text);
      std::string screen = text.str();
      std::string drawn;
      for (char c : screen) {
        if (c == '\n') drawn += "\x1b[K";  // each line cleared to its end
        drawn += c;
      }
      out << "\x1b[H" << drawn << "\x1b[J" << std::flush;
    } else {
      write_text(frame, false, out);
      out << std::flush;
    }
    // Output that cannot be written (a full disk, a closed pipe) ends the watch: main() names
    // the reason and exits 1.
    if (!out) break;
    if (!interactive) top.name_unreadable(err, false);
    if (options.once) break;
    if (!interactive && (top.all_ended(frame) || !top.anything_to_watch())) break;
    // Wait for the interval, answering keys meanwhile.
    const uint64_t until = monotonic_ns() + static_cast<uint64_t>(interval_ms) * 1'000'000;
    bool redraw = false, quit = false;
    while (!redraw && !quit && g_signal == 0) {
      const uint64_t now = monotonic_ns();
      if (now >= until) break;
      pollfd fd{interactive ? STDIN_FILENO : -1, POLLIN, 0};
      const int wait = static_cast<int>((until - now) / 1'000'000) + 1;
      if (::poll(&fd, 1, wait) <= 0 || (fd.revents & POLLIN) == 0) continue;
      char key = 0;
      if (::read(STDIN_FILENO, &key, 1) != 1) continue;
      if (key == 'q' || key == 'Q') quit = true;
      if (key == 's' || key == 'S') {
        top.cycle_sort();
        redraw = true;
      }
      if (key == 'd' || key == 'D') {
        top.cycle_device();
        redraw = true;
      }
    }
    if (quit) break;
  }
  if (interactive) {
    raw.reset();
    out << "\x1b[?25h\x1b[?1049l" << std::flush;
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  const bool unreadable = top.name_unreadable(err, true);
  if (g_signal != 0) return 128 + g_signal;
  return unreadable ? 1 : 0;
}

Command add_top_command(CLI::App& app) {
  auto options = std::make_shared<TopOptions>();
  CLI::App* top = app.add_subcommand("top", "Watch running processes through their traces");
  top->add_option("traces", options->paths, kTracesHelp);
  top->add_option("--pid", options->pids, "A traced process to watch (its open trace)");
  top->add_option("--interval", options->interval, "Seconds between refreshes (default 1)")
      ->check(seconds_interval());
  top->add_flag("--once", options->once, "Print one frame and exit");
  top->add_flag("--json", options->json,
                "One JSON object per refresh, one line each (contract in README.md)");
  return {top, [options] {
            if (options->paths.empty() && options->pids.empty()) {
              std::cerr << "gpumemtrace top: name a trace, a directory or --pid PID\n";
              return 2;
            }
            return top_command(*options, std::cout, std::cerr);
          }};
}

}  // namespace gmt::analyzer
