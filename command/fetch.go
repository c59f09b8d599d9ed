package command

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/pipebench/pipebench/sut/kafka/jars"
)

// fetchCommand fetches what an embedded system under test runs on ahead
// of a run: today the Apache Kafka jars (a machine that will be offline,
// an image, CI's cache).
func (a *app) fetchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fetch",
		Short: "Fetch what an embedded system under test runs on (the Apache Kafka jars) ahead of a run",
	}
	var dir, repo string
	k := &cobra.Command{
		Use:   "kafka",
		Short: "Fetch the pinned Apache Kafka " + jars.Version + " jars from Maven Central, each checked against its SHA-256",
		Long: `Fetches the Apache Kafka ` + jars.Version + ` jars the embedded kafka system under test runs on
(kafka_2.13, kafka-tools, the Prometheus JMX exporter and their dependencies:
a list pinned in the binary with each jar's size and SHA-256) into the
user's cache folder, or --dir. A run with the kafka system under test does
the same by itself the first time; this command does it ahead of time.

Jars already there are checked and kept; a corrupted or partial one is
fetched again; a download that is cut is resumed (HTTP Range). The
repository is Maven Central, or $` + jars.RepoEnv + ` (a mirror), or --repo.
A folder fetched with --dir is used when ` + jars.LibsEnv + ` names it.
Prints the folder.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := jars.CacheDir()
				if err != nil {
					return err
				}
				dir = d
			}
			fmt.Fprintf(a.stderr, "fetching the Apache Kafka %s jars into %s\n", jars.Version, dir)
			got, err := jars.Fetch(cmd.Context(), jars.FetchParams{Dir: dir, Repo: repo, Every: 2 * time.Second, Progress: func(p jars.FetchProgress) {
				if p.Done {
					fmt.Fprintf(a.stderr, "%s in %s\n", jars.FormatProgress(p), p.Elapsed.Round(100*time.Millisecond))
					return
				}
				fmt.Fprintln(a.stderr, jars.FormatProgress(p))
			}})
			if err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, got)
			return nil
		},
	}
	k.Flags().StringVar(&dir, "dir", "", "the folder to fetch into (default: the user's cache folder, where runs look)")
	k.Flags().StringVar(&repo, "repo", "", "the Maven repository's URL (default: $"+jars.RepoEnv+", then "+jars.MavenCentral+")")
	cmd.AddCommand(k)
	return cmd
}
