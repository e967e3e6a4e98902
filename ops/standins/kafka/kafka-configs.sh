#!/bin/sh
exec java -Xmx64m -XX:TieredStopAtLevel=1 -Dlogback.configurationFile=/opt/kafka/config/logback.xml \
  -cp "/opt/kafka/libs/*" kafka.admin.ConfigCommand "$@"
