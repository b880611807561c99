#!/usr/bin/perl
# mtr-candidates.pl MTR_DIR prints the main-suite tests that can run against
# an external server at all: no server options of their own (.opt, .cnf,
# combinations, -master.sh), no replication, no --big-test, and nothing in
# the test or the files it sources, transitively, that stops, kills or
# restarts the server (mariadb-test-run.pl --extern cannot restart it, and a
# stopped server would fail every later test). Which of these pass is then
# found by running them (run.sh discover).
use strict;
use warnings;

my $dir = shift or die "usage: $0 MTR_DIR\n";
chdir $dir or die "$dir: $!\n";

my %bad;    # file => 1 if it, or a file it sources, stops the server
my %seen;

# A line that stops, kills or restarts the server, or that starts one.
my $stops = qr{^\s*--?\s*(shutdown_server|exec\s+\$MYSQLD)\b|\.expect\b|\$MYSQLD_CMD|\$MYSQLD_BOOTSTRAP_CMD|
               include/(restart|kill|shutdown|start|rpl_|master-slave|have_debug|wait_until_disconnected)|
               big_test\.inc}xi;

sub resolve {
	my ($name, $from) = @_;
	$name =~ s/^["']|["';]+$//g;
	$name =~ s/\$MYSQL_TEST_DIR\///;
	for my $p ($name, "main/$name", "include/$name") {
		return $p if -f $p;
	}
	return undef;
}

sub stops {
	my ($file) = @_;
	return $bad{$file} if exists $bad{$file};
	return 0 if $seen{$file}++;    # a cycle; decided by its first visit
	open(my $fh, '<', $file) or return ($bad{$file} = 1);
	my @src;
	my $b = 0;
	while (my $line = <$fh>) {
		next if $line =~ /^\s*#/;
		if ($line =~ $stops) { $b = 1; last }
		push @src, $1 if $line =~ /^\s*-*\s*source\s+(\S+)/i;
	}
	close $fh;
	unless ($b) {
		for my $s (@src) {
			my $p = resolve($s) or next;    # a computed name: judged by running
			if (stops($p)) { $b = 1; last }
		}
	}
	return $bad{$file} = $b;
}

for my $t (sort glob 'main/*.test') {
	(my $name = $t) =~ s{^main/|\.test$}{}g;
	next if grep { -e "main/$name$_" } ('.opt', '-master.opt', '.cnf', '.combinations', '-master.sh');
	next if stops($t);
	print "$name\n";
}
