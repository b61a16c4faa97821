// `perfloom import FILE|DIR... [--db PATH] [--json]` (CONTRACT.md): imports traces and datasets
// into the database, one summary line per file (format, kernels, GPU, time). Every file is its own
// transaction: a file that fails leaves nothing behind and the others are still imported; the
// exit status is non-zero when any file failed (including one imported before). A folder is one
// source: a folder of collector CSVs (what tools/collector writes, e.g. data/h100-sxm: its
// CSVs, not the trace or logs next to them, which a warning names) or a public-dataset tree.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "app/cli_commands.h"
#include "model/json_fields.h"
#include "storage/database.h"
#include "storage/kernel_store.h"

namespace perfloom::app {

namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.2f s" : "%.1f s", s);
  return buf;
}

std::string gpu_text(const storage::ImportSummary& s) {
  if (!s.gpu_id.empty())
    return "GPU " + s.gpu_id +
           (s.gpu_name.empty() || s.gpu_name == s.gpu_id ? "" : " (" + text_excerpt(s.gpu_name) + ")");
  if (!s.gpu_name.empty()) return "GPU " + quote_excerpt(s.gpu_name) + " (unknown)";
  std::error_code ec;
  return s.format == "public-dataset" || std::filesystem::is_directory(s.path, ec) ? "several GPUs" : "GPU unknown";
}

}  // namespace

int cmdImport(CliContext& ctx, const QCommandLineParser& args) {
  const QStringList files = args.positionalArguments();
  if (files.isEmpty()) {
    std::cerr << "perfloom import: needs at least one FILE (a torch.profiler trace, an nsys SQLite export, an ncu "
                 "CSV, a collector CSV or a public dataset) or DIR (a folder of collector CSVs, or of public "
                 "datasets)\n";
    return 2;
  }
  storage::Database db(ctx.db_path);
  storage::KernelStore store(db);
  const bool tty = !ctx.json && ::isatty(STDERR_FILENO);

  nlohmann::json results = nlohmann::json::array();
  int failed = 0;
  for (const QString& qfile : files) {
    const std::string path = qfile.toStdString();
    const std::string file = printable_name(path);  // one line per file, whatever the name holds
    storage::ImportControl control;
    control.gpus = &ctx.gpus;
    if (tty) {
      control.progress = [&file](const storage::ImportProgress& p) {
        if (p.bytes_total > 0)
          std::fprintf(stderr, "\r%s: %s %3.0f%%  ", file.c_str(), p.stage.c_str(),
                       100.0 * static_cast<double>(p.bytes_done) / static_cast<double>(p.bytes_total));
        else
          std::fprintf(stderr, "\r%s: %s, %llu kernels  ", file.c_str(), p.stage.c_str(),
                       static_cast<unsigned long long>(p.kernels));
        std::fflush(stderr);
      };
    }
    nlohmann::json r{{"path", path}};
    try {
      storage::ImportSummary s = store.import_file(path, control);
      if (tty) std::fprintf(stderr, "\r\033[K");
      r["status"] = "imported";
      r["source_id"] = s.source_id;
      r["format"] = s.format;
      r["kernels"] = s.kernels;
      r["gpu_id"] = s.gpu_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.gpu_id);
      r["gpu_name"] = s.gpu_name.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.gpu_name);
      r["bytes"] = s.bytes;
      r["seconds"] = s.seconds;
      r["content_hash"] = s.content_hash;
      r["warnings"] = s.warnings;
      if (!ctx.json) {
        std::cout << file << ": " << s.format << ", " << s.kernels << " kernels, " << gpu_text(s) << ", "
                  << seconds_text(s.seconds) << " (source " << s.source_id << ")\n";
        std::cout.flush();
        for (const auto& w : s.warnings) std::cerr << "perfloom import: " << file << ": warning: " << w << "\n";
      }
    } catch (const storage::AlreadyImported& e) {
      if (tty) std::fprintf(stderr, "\r\033[K");
      ++failed;
      r["status"] = "duplicate";
      r["source_id"] = e.source_id();
      r["error"] = e.what();
      std::cerr << "perfloom import: " << e.what() << "\n";
    } catch (const std::exception& e) {
      if (tty) std::fprintf(stderr, "\r\033[K");
      ++failed;
      r["status"] = "failed";
      r["error"] = e.what();
      std::cerr << "perfloom import: " << e.what() << "\n";
    }
    results.push_back(std::move(r));
  }
  if (ctx.json) {
    nlohmann::json doc{{"database", ctx.db_path.string()}, {"files", results}, {"failed", failed}};
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else if (failed) {
    std::cerr << "perfloom import: " << failed << " of " << files.size() << " files not imported\n";
  }
  return failed ? 1 : 0;
}

}  // namespace perfloom::app
