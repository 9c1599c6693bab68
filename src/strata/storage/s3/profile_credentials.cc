// Shared-file credentials: ~/.aws/credentials and ~/.aws/config
// (credential_sources.h).
#include "strata/storage/s3/credential_sources.h"

#include <fmt/format.h>

namespace strata::internal_storage {

namespace {



}  // namespace

std::string ProfileName(const std::string& explicit_profile) {
  if (!explicit_profile.empty()) return explicit_profile;
  std::string name = Getenv("AWS_PROFILE");
  if (name.empty()) name = Getenv("AWS_DEFAULT_PROFILE");
  return name.empty() ? "default" : name;
}

std::string CredentialsFilePath() {
  std::string path = Getenv("AWS_SHARED_CREDENTIALS_FILE");
  return ExpandUser(path.empty() ? "~/.aws/credentials" : path);
}

std::string ConfigFilePath() {
  std::string path = Getenv("AWS_CONFIG_FILE");
  return ExpandUser(path.empty() ? "~/.aws/config" : path);
}

Result<Profile> LoadProfile(const std::string& name) {
  Profile p;
  p.name = name;
  p.credentials_path = CredentialsFilePath();
  p.config_path = ConfigFilePath();
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> credentials_text,
                          ReadFileIfExists(p.credentials_path, "shared credentials file"));
  if (credentials_text) {
    STRATA_ASSIGN_OR_RETURN(IniSections sections,
                            ParseAwsIni(*credentials_text, p.credentials_path));
    if (auto it = sections.find(name); it != sections.end()) p.credentials = it->second;
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> config_text,
                          ReadFileIfExists(p.config_path, "config file"));
  if (config_text) {
    STRATA_ASSIGN_OR_RETURN(IniSections sections, ParseAwsIni(*config_text, p.config_path));
    auto it = sections.find("profile " + name);
    if (it == sections.end() && name == "default") it = sections.find("default");
    if (it != sections.end()) p.config = it->second;
  }
  return p;
}

std::string Setting(const std::optional<std::map<std::string, std::string>>& section,
                    const char* key) {
  if (!section) return std::string();
  auto it = section->find(key);
  return it == section->end() ? std::string() : it->second;
}

Result<MaybeProvider> FromSharedFiles(ChainContext& chain) {
  const std::string name = ProfileName(chain.options.profile);
  STRATA_ASSIGN_OR_RETURN(Profile profile, LoadProfile(name));
  const std::string where = fmt::format("profile '{}' in {} and {}", name,
                                        profile.credentials_path, profile.config_path);
  if (!profile.credentials && !profile.config) {
    // A profile named other than "default" must exist; "default" may not.
    if (name != "default") {
      return InvalidArgumentError(fmt::format("shared files: profile '{}' is in neither {} nor {}",
                                              name, profile.credentials_path,
                                              profile.config_path));
    }
    chain.looked.push_back(fmt::format("shared files ({}: absent)", where));
    return MaybeProvider();
  }
  // Keys: the credentials file's section, else the config file's.
  for (const auto* section : {&profile.credentials, &profile.config}) {
    const std::string key = Setting(*section, "aws_access_key_id");
    const std::string secret = Setting(*section, "aws_secret_access_key");
    if (key.empty() && secret.empty()) continue;
    const std::string& path =
        section == &profile.credentials ? profile.credentials_path : profile.config_path;
    if (key.empty() || secret.empty()) {
      return InvalidArgumentError(
          fmt::format("shared files: profile '{}' in {} has {} but not {}", name, path,
                      key.empty() ? "aws_secret_access_key" : "aws_access_key_id",
                      key.empty() ? "aws_access_key_id" : "aws_secret_access_key"));
    }
    AwsCredentials c;
    c.access_key_id = key;
    c.secret_access_key = secret;
    c.session_token = Setting(*section, "aws_session_token");
    return MaybeProvider(StaticAwsCredentialProvider(
        std::move(c), fmt::format("shared files (profile '{}' in {})", name, path)));
  }
  // Web identity configured in the profile.
  WebIdentityConfig config;
  config.token_file = Setting(profile.config, "web_identity_token_file");
  config.role_arn = Setting(profile.config, "role_arn");
  config.session_name = Setting(profile.config, "role_session_name");
  if (!config.token_file.empty()) {
    if (config.role_arn.empty()) {
      return InvalidArgumentError(fmt::format(
          "shared files: profile '{}' in {} has web_identity_token_file but no role_arn", name,
          profile.config_path));
    }
    return WebIdentitySource(std::move(config), chain);
  }
  // What the SDKs can do and this chain cannot: say so rather than skip.
  for (const char* unsupported : {"credential_process", "source_profile", "credential_source",
                                  "sso_session", "sso_start_url"}) {
    if (!Setting(profile.config, unsupported).empty()) {
      return UnimplementedError(fmt::format(
          "shared files: profile '{}' in {} uses {}, which strata does not support (give the "
          "profile aws_access_key_id/aws_secret_access_key, or web_identity_token_file and "
          "role_arn)",
          name, profile.config_path, unsupported));
    }
  }
  chain.looked.push_back(fmt::format("shared files ({}: no credentials in it)", where));
  return MaybeProvider();
}

}  // namespace strata::internal_storage
