#!/bin/sh
# Builds the reference Java node offline, from Debian's packages only:
#   apt-get install -y --no-install-recommends openjdk-17-jdk-headless \
#       libcurator-recipes-java libslf4j-java
# (libcurator-recipes-java brings Curator's framework and client, ZooKeeper's client
# and Guava.) javac compiles src/ against the jars in /usr/share/java into build/classes;
# bin/curator-node is a launcher that runs java with that classpath. Nothing is fetched.
set -eu

JDK=${JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
JAVAC=$JDK/bin/javac
JAVA=$JDK/bin/java
J=/usr/share/java

if [ ! -x "$JAVAC" ] || [ ! -x "$JAVA" ]; then
    echo "curator-node: needs a JDK 17 at $JDK (javac and java): apt-get install -y --no-install-recommends openjdk-17-jdk-headless" >&2
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
rm -rf build/classes
mkdir -p build/classes bin
# -Xlint:-path: zookeeper.jar's manifest names jars Debian does not ship (jline, ...),
# which the client never loads. -XDstringConcat=inline: string concatenation as
# StringBuilder calls, not invokedynamic, whose first use spins method handles (15 ms
# of a cold JVM's first GET /status).
"$JAVAC" --release 17 -XDstringConcat=inline -Xlint:all,-path -Werror -d build/classes -cp "$CP" src/curatornode/*.java

# The launcher. Baton runs it as the node's command: exec keeps java in the process
# (and process group) Baton started. Modest memory: 3 to 9 of these run at once on a
# small machine. C1 only (TieredStopAtLevel=1): less compiling at start, on a busy CPU.
# -XX:-UsePerfData: no hsperfdata file in /tmp. Logging: slf4j-simple on stderr,
# Curator at INFO (its connection state changes), ZooKeeper's client at WARN.
cat > bin/curator-node <<EOF
#!/bin/sh
# Written by build.sh: runs the Curator node. Configuration: Baton's BATON_* variables.
exec "$JAVA" -Xms32m -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -XX:-UsePerfData -Xss512k \\
    -Dorg.slf4j.simpleLogger.showDateTime=true \\
    -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS \\
    -Dorg.slf4j.simpleLogger.defaultLogLevel=info \\
    -Dorg.slf4j.simpleLogger.log.org.apache.zookeeper=warn \\
    -cp "$here/build/classes:$CP:$J/slf4j-simple.jar" curatornode.Main "\$@"
EOF
chmod +x bin/curator-node
echo "built $here/bin/curator-node"
