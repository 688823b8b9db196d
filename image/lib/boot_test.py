#!/usr/bin/env python3
"""Helpers of image/boot-test that are easier in Python than in shell: reading the release
manifest and the agent's JSON, making the three bad configuration partitions, and serving
a captured evidence bundle again (a replay with a stale nonce).

  boot_test.py manifest MANIFEST KEY.KEY...        print values (dotted paths), one a line
  boot_test.py json FILE PATH                      print one value of a JSON file ('' if absent)
  boot_test.py find-key FILE KEY                   first value of KEY anywhere in the JSON
  boot_test.py mutate DISK OFFSET SIZE KIND        KIND: flip | unknown | symlink
  boot_test.py replay PORT_FILE BUNDLE             serve BUNDLE for every GET on a free port
  boot_test.py registry REGISTRY                   one line per record: decision node reasons
"""
import http.server
import io
import json
import sys
import tarfile


def dotted(obj, path):
    for part in path.split("."):
        if isinstance(obj, list):
            obj = obj[int(part)]
        elif isinstance(obj, dict):
            obj = obj.get(part)
        else:
            return None
        if obj is None:
            return None
    return obj


def find_key(obj, key):
    if isinstance(obj, dict):
        if key in obj and obj[key] is not None:
            return obj[key]
        children = obj.values()
    elif isinstance(obj, list):
        children = obj
    else:
        return None
    for v in children:
        r = find_key(v, key)
        if r is not None:
            return r
    return None


def show(v):
    if v is None:
        return ""
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True)
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def members(region):
    """(TarInfo, data) of every member of the ustar archive at the start of region."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(region), mode="r:") as tar:
        for info in tar:
            data = tar.extractfile(info).read() if info.isreg() else b""
            out.append((info, data))
    return out


def octal(value, width):
    """A numeric ustar field as the writer (Rust's tar crate) fills it: width - 1 octal
    digits, then NUL."""
    return b"%0*o\0" % (width - 1, value)


def writer_header(info):
    """The 512-byte ustar header the sn-config writer makes for a member of this name, size
    and type: mode 0644, uid/gid 0, mtime 0, empty owner names and device fields, the
    checksum as seven octal digits and NUL. Python's tarfile writes the checksum and the
    device fields differently, and the node's reader refuses any header that is not the
    writer's, before it looks at the member's name: a mutation made with tarfile would be
    refused for its header instead of for what the test changed."""
    name = info.name.encode()
    link = info.linkname.encode()
    size = info.size if info.isreg() else 0
    header = bytearray(512)
    header[0 : len(name)] = name
    header[100:108] = octal(0o644, 8)
    header[108:116] = octal(0, 8)
    header[116:124] = octal(0, 8)
    header[124:136] = octal(size, 12)
    header[136:148] = octal(0, 12)
    header[148:156] = b" " * 8
    header[156:157] = info.type
    header[157 : 157 + len(link)] = link
    header[257:263] = b"ustar\0"
    header[263:265] = b"00"
    header[148:156] = octal(sum(header), 8)
    return bytes(header)


def write_archive(entries, size):
    """The members in the writer's header form, the end-of-archive marker, then zeros to
    the partition's size."""
    out = bytearray()
    for info, data in entries:
        out += writer_header(info)
        if info.isreg():
            out += data + bytes(-len(data) % 512)
    out += bytes(1024)
    if len(out) > size:
        sys.exit(f"archive of {len(out)} bytes does not fit the partition ({size})")
    return bytes(out) + bytes(size - len(out))


def regular(name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = 0o644
    info.mtime = 0
    return info


def mutate(disk, offset, size, kind):
    with open(disk, "r+b") as f:
        f.seek(offset)
        region = f.read(size)
        entries = members(region)
        names = [i.name for i, _ in entries]
        if "node.toml" not in names:
            sys.exit(f"no node.toml in the flashed partition (members: {names})")
        if write_archive(entries, size) != region:
            sys.exit("the flashed partition is not what write_archive makes of its members: "
                     "the mutations would not be in the writer's form")
        if kind == "flip":
            # One byte of node.toml's content: the archive stays well formed, the
            # checksum in SHA256SUMS no longer matches.
            with tarfile.open(fileobj=io.BytesIO(region), mode="r:") as tar:
                info = tar.getmember("node.toml")
                at = offset + info.offset_data + 10
            f.seek(at)
            byte = f.read(1)
            f.seek(at)
            f.write(bytes([byte[0] ^ 0x01]))
            print(f"flipped the byte at {at} (node.toml + 10): {byte.hex()} -> {byte[0] ^ 1:02x}")
            return
        if kind == "unknown":
            entries.append((regular("extra.conf", b"unexpected = true\n"), b"unexpected = true\n"))
            what = "added the member extra.conf"
        elif kind == "symlink":
            link = tarfile.TarInfo("ic.json5")
            link.type = tarfile.SYMTYPE
            link.linkname = "/etc/shadow"
            link.mode = 0o777
            link.mtime = 0
            entries.append((link, b""))
            what = "added the member ic.json5, a symbolic link to /etc/shadow"
        else:
            sys.exit(f"unknown mutation {kind}")
        f.seek(offset)
        f.write(write_archive(entries, size))
        print(f"{what} ({len(entries)} members)")


def replay(port_file, bundle):
    body = open(bundle, "rb").read()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os

    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "manifest":
        m = json.load(open(args[0]))
        for path in args[1:]:
            print(show(dotted(m, path)))
    elif cmd == "json":
        try:
            doc = json.load(open(args[0]))
        except (OSError, ValueError):
            print("")
            return
        print(show(dotted(doc, args[1])))
    elif cmd == "find-key":
        try:
            doc = json.load(open(args[0]))
        except (OSError, ValueError):
            print("")
            return
        print(show(find_key(doc, args[1])))
    elif cmd == "mutate":
        mutate(args[0], int(args[1]), int(args[2]), args[3])
    elif cmd == "replay":
        replay(args[0], args[1])
    elif cmd == "registry":
        for line in open(args[0]):
            if line.strip():
                r = json.loads(line)
                reasons = "; ".join(r.get("reasons") or [])
                print(f"{r.get('decision')}\t{r.get('name') or r.get('node')}\t{reasons}")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
