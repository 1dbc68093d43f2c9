// --plot: runs bench/plot_results.py (python3 + matplotlib) on the CSV.
#pragma once

#include <string>

namespace pump::bench {

// The python3 that has matplotlib ("python3" on PATH or /usr/bin/python3), or "" with
// one line in *message saying what to install.
std::string plot_python(std::string* message);

// Returns false with one line in *message when python3 or matplotlib is missing
// or the script failed; the JSON/CSV are unaffected.
bool plot_csv(const std::string& script, const std::string& csv_path, const std::string& png_path,
              std::string* message);

}  // namespace pump::bench
