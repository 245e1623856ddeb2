#!/bin/sh
# Builds the reference Java node offline, from Debian's packages only:
#   apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
#       libcurator-recipes-java libslf4j-java
# (libcurator-recipes-java brings Curator's framework and client, ZooKeeper's client
# and Guava.) javac compiles src/ against the jars in /usr/share/java into
# build/curator-node.jar; a short training run records a class data sharing archive
# (build/curator-node.jsa); bin/curator-node is a launcher that runs java with that
# classpath and archive. Nothing is fetched.
set -eu

JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
JAVAC=$JDK/bin/javac
JAVA=$JDK/bin/java
J=/usr/share/java

if [ ! -x "$JAVAC" ] || [ ! -x "$JAVA" ] || [ ! -x "$JDK/bin/jar" ]; then
    echo "curator-node: needs a JDK 17 at $JDK (javac, jar and java): apt-get install -y --no-install-recommends openjdk-17-jdk-headless" >&2
    exit 2
fi

# jar and the Debian package that installs it
need() {
    if [ ! -f "$J/$1" ]; then
        echo "curator-node: $J/$1 is missing: apt-get install -y --no-install-recommends $2" >&2
        exit 2
    fi
}
need curator-recipes.jar libcurator-recipes-java
need curator-framework.jar libcurator-framework-java
need curator-client.jar libcurator-client-java
need zookeeper.jar libzookeeper-java
need zookeeper-jute.jar libzookeeper-java
need guava.jar libguava-java
need slf4j-api.jar libslf4j-java
need slf4j-simple.jar libslf4j-java

CP=$J/curator-recipes.jar:$J/curator-framework.jar:$J/curator-client.jar:$J/zookeeper.jar:$J/zookeeper-jute.jar:$J/guava.jar:$J/slf4j-api.jar

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
rm -rf build
mkdir -p build/classes bin
# -Xlint:-path: zookeeper.jar's manifest names jars Debian does not ship (jline, ...),
# which the client never loads. -XDstringConcat=inline: string concatenation as
# StringBuilder calls, not invokedynamic, whose first use spins method handles (15 ms
# of a cold JVM's first GET /status).
"$JAVAC" --release 17 -XDstringConcat=inline -Xlint:all,-path -Werror -d build/classes -cp "$CP" src/curatornode/*.java
# A jar, not a directory: class data sharing takes only jars on the classpath.
"$JDK/bin/jar" --create --file build/curator-node.jar -C build/classes .

RUNCP=$here/build/curator-node.jar:$CP:$J/slf4j-simple.jar
# Modest memory: 3 to 9 of these run at once on a small machine. C1 only
# (TieredStopAtLevel=1): less compiling at start, on a busy CPU. -XX:-UsePerfData: no
# hsperfdata file in /tmp.
OPTS="-Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xss512k"
# Logging: slf4j-simple on stderr, Curator at INFO (its connection state changes),
# ZooKeeper's client at WARN.
LOG="-Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS -Dorg.slf4j.simpleLogger.defaultLogLevel=info -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper=warn"
QUIET_CDS="-Xlog:cds=off -Xlog:cds+dynamic=off"

# Class data sharing: a 3 s training run (no ZooKeeper behind its address; its HTTP
# port any free one on 127.0.0.1) writes the classes a node loads into
# build/curator-node.jsa as its JVM exits, and the launcher maps them instead of
# parsing and verifying some 2,000 classes at every start. If the run fails, the node
# runs without an archive; if a JDK update makes it stale, the JVM ignores it.
(
    BATON_ID=cds-training BATON_HTTP_PORT=0 BATON_ZK_CONNECT=127.0.0.1:1 \
        BATON_ZK_ELECTION_PATH=/cds-training BATON_RESOURCE_URL=http://127.0.0.1:1/ \
        exec "$JAVA" -XX:ArchiveClassesAtExit="$here/build/curator-node.jsa" $QUIET_CDS \
        $OPTS -Dorg.slf4j.simpleLogger.defaultLogLevel=off -cp "$RUNCP" curatornode.Main
) > build/cds-training.out 2>&1 &
pid=$!
sleep 1
port=$(sed -n 's/^LISTENING 127\.0\.0\.1:\([0-9]*\)$/\1/p' build/cds-training.out)
if [ -n "$port" ] && command -v curl >/dev/null 2>&1; then
    # The HTTP paths, so that their classes are in the archive too (none of these
    # changes anything: the training node never leads).
    for req in "GET /status" "GET /metrics" "POST /next?count=2" "POST /resign"; do
        curl -s -o /dev/null -X "${req% *}" "http://127.0.0.1:$port${req#* }" || true
    done
fi
sleep 2
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
CDS=
if [ -s build/curator-node.jsa ]; then
    CDS="-XX:SharedArchiveFile=$here/build/curator-node.jsa $QUIET_CDS"
else
    echo "curator-node: no class data sharing archive (build/cds-training.out says why); the node runs without one" >&2
fi

# The launcher. Baton runs it as the node's command: exec keeps java in the process
# (and process group) Baton started.
cat > bin/curator-node <<LAUNCHER
#!/bin/sh
# Written by build.sh: runs the Curator node. Configuration: Baton's BATON_* variables.
exec "$JAVA" $OPTS $CDS \\
    $LOG \\
    -cp "$RUNCP" curatornode.Main "\$@"
LAUNCHER
chmod +x bin/curator-node
echo "built $here/bin/curator-node"
