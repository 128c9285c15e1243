"""Pulls one tag with PyPI's oras SDK, an OCI client independent of
tfmirror, and checks every digest on the way: the manifest (or index and
each platform's manifest) and every archive/zip layer it names. Prints
what it found as JSON: {"tags": [...], "digest": <tag's manifest digest>,
"layers": {<platform or "module">: {"digest", "size", "file"}}}.

Usage: oras_pull.py HOST REPO TAG CA_FILE OUT_DIR; ORAS_USER and
ORAS_PASSWORD, when set, are sent as Basic credentials.
"""
import hashlib
import json
import os
import sys

import oras.container
import oras.provider

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"

host, repo, tag, ca, out = sys.argv[1:6]
registry = oras.provider.Registry(hostname=host, tls_verify=ca, auth_backend="basic")
if os.environ.get("ORAS_USER"):
    registry.auth.set_basic_auth(os.environ["ORAS_USER"], os.environ["ORAS_PASSWORD"])


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def raw_manifest(reference, media_type):
    """A manifest's exact bytes, checked against the digest that names it."""
    container = oras.container.Container(f"{host}/{repo}@{reference}" if ":" in reference else f"{host}/{repo}:{reference}")
    registry.auth.load_configs(container)
    response = registry.do_request(
        f"https://{container.manifest_url()}", "GET", headers={"Accept": media_type}
    )
    assert response.status_code == 200, (reference, response.status_code, response.text)
    body = response.content
    digest = response.headers.get("Docker-Content-Digest")
    if ":" in reference:
        assert sha256(body) == reference, f"{reference}: the body hashes to {sha256(body)}"
    if digest:
        assert digest == sha256(body), f"{reference}: Docker-Content-Digest {digest}"
    parsed = json.loads(body)
    assert parsed["mediaType"] == media_type, parsed
    # The SDK's own reading of the same manifest agrees.
    assert registry.get_manifest(container, allowed_media_type=[media_type]) == parsed
    return sha256(body), parsed


def layer(manifest, name):
    zips = [l for l in manifest["layers"] if l["mediaType"] == "archive/zip"]
    assert len(zips) == 1, manifest
    d = zips[0]["digest"]
    path = os.path.join(out, name + ".zip")
    container = oras.container.Container(f"{host}/{repo}:{tag}")
    registry.download_blob(container, d, path)
    with open(path, "rb") as f:
        data = f.read()
    assert sha256(data) == d, f"{name}: the blob hashes to {sha256(data)}, not {d}"
    assert len(data) == zips[0]["size"], name
    return {"digest": d, "size": len(data), "file": path}


tags = registry.get_tags(oras.container.Container(f"{host}/{repo}"))
found = {"tags": tags, "layers": {}}
if os.environ.get("ORAS_KIND") == "provider":
    digest, index = raw_manifest(tag, INDEX)
    assert index["artifactType"] == "application/vnd.opentofu.provider", index
    found["digest"] = digest
    for entry in index["manifests"]:
        _, manifest = raw_manifest(entry["digest"], MANIFEST)
        assert manifest["artifactType"] == "application/vnd.opentofu.provider-target"
        platform = entry["platform"]["os"] + "_" + entry["platform"]["architecture"]
        found["layers"][platform] = layer(manifest, platform)
else:
    digest, manifest = raw_manifest(tag, MANIFEST)
    assert manifest["artifactType"] == "application/vnd.opentofu.modulepkg", manifest
    found["digest"] = digest
    found["layers"]["module"] = layer(manifest, "module")
print(json.dumps(found))
