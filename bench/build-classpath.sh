# Sourced by the run-*-bench.sh scripts that start `./im platform` (from the repository root): builds the
# bench module and what it depends on (which refreshes launcher/target/im.jar) and writes its class path to
# bench/target/cp.txt; warns when sources are newer than the jar; raises the soft open-files limit to the
# hard one; prints the commit. MVN_FLAGS replaces the Maven flags (default -o, offline).
# One reactor build (nothing is installed into ~/.m2): sibling modules resolve to their target/ jars.
mvn -B -q ${MVN_FLAGS:--o} -pl bench -am package dependency:build-classpath -DskipTests -Dmdep.outputFile=target/cp.txt
# ./im rebuilds its jar when any source is newer than it; say so now rather than inside a measured start.
if [ -n "$(find . -path ./var -prune -o -path '*/target' -prune -o \( -name '*.java' -o -name 'pom.xml' -o -name '*.sql' -o -name '*.xml' \) -newer launcher/target/im.jar -print -quit)" ]; then
  echo "# warning: sources are newer than launcher/target/im.jar (edited during the build?); ./im rebuilds it before a platform starts" >&2
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true   # the soft open-files limit up to the hard one
if git rev-parse --git-dir >/dev/null 2>&1; then
  echo "# git: $(git rev-parse --short HEAD), $(git status --porcelain | wc -l) uncommitted paths: $(git status --porcelain | awk '{print $2}' | tr '\n' ' ')"
fi
