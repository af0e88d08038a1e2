// Command kfake serves franz-go's in-memory Kafka cluster (pkg/kfake), one
// broker, as the reference the load test measures the example broker against.
// It takes the example's -addr and -topics flags, prints the same first line,
// and stops on SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen here")
	topics := flag.String("topics", "", "topics to create, comma-separated NAME:PARTITIONS")
	flag.Parse()
	_, port, err := net.SplitHostPort(*addr)
	if err != nil {
		log.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(p), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(8)}
	for _, t := range strings.Split(*topics, ",") {
		if name, n, ok := strings.Cut(t, ":"); ok {
			count, err := strconv.Atoi(n)
			if err != nil {
				log.Fatalf("-topics %q: %v", *topics, err)
			}
			opts = append(opts, kfake.SeedTopics(int32(count), name))
		}
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("kafka: listening on %s (kfake)\n", c.ListenAddrs()[0])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	c.Close()
	fmt.Println("kafka: stopped")
}
