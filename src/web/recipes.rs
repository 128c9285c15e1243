//! The CLI configuration to copy, as the home page and the status page
//! show it: the `network_mirror` block, a `credentials` block when access
//! control is on, a `host` block per registry host (modules, and complete
//! lock files through the registry protocol), and the version managers'
//! settings for the CLI releases served.

use serde::Serialize;

use super::{PageRequest, Site};
use crate::address::Product;

/// The CLI configuration to copy.
#[derive(Debug, Clone, Serialize)]
pub struct Recipes {
    /// The `provider_installation` block with the network mirror.
    pub network_mirror: String,
    /// The `credentials` block, with access control on.
    pub credentials: Option<String>,
    /// A `host` block per registry host the mirror serves.
    pub hosts: Vec<HostBlock>,
    /// The version managers' settings, when CLI releases are served.
    pub version_managers: Option<String>,
}

/// One registry host's `host` block.
#[derive(Debug, Clone, Serialize)]
pub struct HostBlock {
    /// The registry host.
    pub host: String,
    /// The block.
    pub block: String,
}

/// The recipes, naming the mirror as the request reached it.
pub fn recipes(site: Site<'_>, req: &PageRequest<'_>) -> Recipes {
    let base = req.base_url();
    let up = &site.mirror.config().upstream;
    let mut hosts: Vec<String> = (up.allowed_hosts.iter())
        .chain(up.hosts.keys())
        .map(ToString::to_string)
        .collect();
    hosts.sort();
    hosts.dedup();
    let hosts = hosts
        .into_iter()
        .map(|host| HostBlock {
            block: format!(
                "host \"{host}\" {{\n  services = {{\n    \"modules.v1\"   = \"{base}v1/modules/{host}/\"\n    \"providers.v1\" = \"{base}v1/providers/{host}/\"\n  }}\n}}"
            ),
            host,
        })
        .collect();
    let credentials = site.auth.enabled().then(|| {
        format!(
            "credentials \"{}\" {{\n  token = \"<your token>\"\n}}",
            req.authority.trim_end_matches(":443")
        )
    });
    Recipes {
        network_mirror: format!(
            "provider_installation {{\n  network_mirror {{\n    url = \"{base}\"\n  }}\n}}"
        ),
        credentials,
        hosts,
        version_managers: version_managers(site, base.trim_end_matches('/')),
    }
}

/// The settings that point each version manager at the mirror's CLI
/// releases, for the products it serves.
fn version_managers(site: Site<'_>, base: &str) -> Option<String> {
    let products = site.mirror.release_state().products();
    if products.is_empty() {
        return None;
    }
    let mut lines = Vec::new();
    if products.contains(&Product::Terraform) {
        lines.push(format!("export TFENV_REMOTE={base}   # tenv and tfenv"));
        lines.push(format!(
            "tfswitch --mirror {base}/terraform/index.json --mirror-download {base}/terraform"
        ));
        lines.push(format!("# hc-install: ApiBaseURL = \"{base}\""));
    }
    if products.contains(&Product::Tofu) {
        lines.push(format!(
            "export TOFUENV_REMOTE={base}   # tenv, direct mode"
        ));
        lines.push(format!(
            "export TOFUENV_LIST_MODE=mirror TOFUENV_LIST_URL={base}/tofu/api.json"
        ));
        lines.push(format!("tfswitch --product opentofu --mirror {base}/tofu/api.json --mirror-download {base}/opentofu/opentofu/releases/download"));
    }
    Some(lines.join("\n"))
}
