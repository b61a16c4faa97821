#pragma once
// The GPU database: the files of gpus/, embedded in the binary at build time, plus any files the
// user adds from a folder. Every file is validated; a bad one is refused with its name, the field
// and the reason, and nothing of it is kept. It also sets every GPU's achievable rates
// (GpuSpec::achievable, model/calibration.h): measured where a calibration of that GPU is attached
// (target-measured tier), else the datasheet times the default fractions (cross-generation tier).
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/calibration.h"
#include "model/gpu_spec.h"
#include "model/input_error.h"

namespace perfloom {

// A GPU file perfloom refuses; what() reads "FILE: field 'FIELD': REASON".
class GpuSpecError : public InputError {
 public:
  using InputError::InputError;
};

// Parses and validates one GPU file. `file_label` names the file in error messages.
GpuSpec parse_gpu_spec(std::string_view json_text, const std::string& file_label);

nlohmann::json gpu_spec_to_json(const GpuSpec& gpu);

class GpuDatabase {
 public:
  // The files of gpus/ that were embedded at build time. Throws GpuSpecError if one is invalid.
  static GpuDatabase builtin();

  // Adds one file's GPU; a GPU whose id already exists replaces it (a user's corrected spec),
  // but an alias that names a different GPU is refused.
  void add(GpuSpec gpu);
  void add_json(std::string_view json_text, const std::string& file_label);
  // Adds every *.json of a folder, in name order. All or nothing: on the first bad file it throws
  // and the database is left as it was.
  void add_directory(const std::filesystem::path& dir);

  // By id, name or alias, case-insensitively; nullptr if none.
  const GpuSpec* find(std::string_view id_or_alias) const;
  // Like find(), but throws std::invalid_argument naming the close matches.
  const GpuSpec& get(std::string_view id_or_alias) const;

  const std::vector<GpuSpec>& all() const { return gpus_; }
  std::size_t size() const { return gpus_.size(); }

  // Attaches a calibration to the GPU it was measured on, replacing that GPU's earlier one, and
  // returns the GPU's id. Throws CalibrationError (nothing changed) when no GPU matches it.
  // builtin() attaches the bundled calibrations (resources/calibration).
  std::string add_calibration(Calibration c);
  void remove_calibration(std::string_view gpu_id);
  const Calibration* calibration(std::string_view gpu_id) const;
  // The default fractions average the bundled calibrations only (what the shipped models were
  // trained with; a user's calibration changes its own GPU, not the others), less those of
  // `gpu_ids` (the held-out GPUs of an evaluation, so that their measurements reach no other GPU).
  void exclude_from_defaults(const std::set<std::string>& gpu_ids);
  const AchievableFractions& default_fractions() const { return defaults_; }

 private:
  void refresh_achievable();
  std::vector<GpuSpec> gpus_;
  std::map<std::string, Calibration> calibrations_;               // by GPU id
  std::map<std::string, AchievableFractions> bundled_fractions_;  // by GPU id
  std::set<std::string> excluded_from_defaults_;
  AchievableFractions defaults_;
};

}  // namespace perfloom
