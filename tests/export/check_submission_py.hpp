// Python source of the static submission checker (see check_submission_py.cpp). Run as
// `python3 checker.py SUBMISSION_DIR [DECODED_DIR]`; prints one JSON object {"problems": [...],
// "manifest": [...], "variants": [...], "cases_checked": N}; DECODED_DIR receives <variant>.bin, the
// decoded cubins.
#pragma once

namespace attn::test {
const char* submission_checker_py();
}
