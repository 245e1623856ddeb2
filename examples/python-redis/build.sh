#!/bin/sh
# Nothing to compile: checks, offline, that Debian's python3-redis (redis-py) is installed for
# /usr/bin/python3 (the interpreter node.py's shebang names: a python3 elsewhere on PATH,
# such as a pyenv one, does not see Debian's dist-packages), then byte-compiles the node
# and the shared module to catch a syntax error now rather than at the node's start.
#   apt-get install -y --no-install-recommends python3-redis
set -eu

here=$(cd "$(dirname "$0")" && pwd)
if [ ! -x /usr/bin/python3 ] || ! /usr/bin/python3 -c 'import redis' >/dev/null 2>&1; then
    echo "python-redis: needs redis-py for /usr/bin/python3: apt-get install -y --no-install-recommends python3-redis" >&2
    exit 2
fi
version=$(/usr/bin/python3 -c 'import redis; print(redis.__version__)')
/usr/bin/python3 -m py_compile "$here/node.py" "$here/../python-common/baton_node.py"
if [ "$version" != "4.3.4" ]; then
    echo "python-redis: note: redis-py $version here; the README's results are for 4.3.4" >&2
fi
echo "python-redis: ready: $here/node.py (redis-py $version, $(/usr/bin/python3 --version))"
