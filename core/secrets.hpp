#pragma once
// Secrets held in this process's environment (API keys, database passwords)
// must never come back from untrusted code into what autotune prints or
// stores. The sandbox starts generated code with a clean environment; this is
// the second line of defence for text that returns from it (a secret the code
// found in a file it could read).
#include <string>

namespace autotune {

// True for environment variable names that carry credentials: names holding
// KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASSPHRASE or CREDENTIAL
// (case-insensitive), and PGPASSWORD.
bool is_secret_variable(const std::string& name);

// `text` with the value of every secret environment variable (of at least 6
// characters, so that short values do not blank out ordinary words) replaced
// by "<redacted>".
std::string redact_secret_values(std::string text);

}  // namespace autotune
