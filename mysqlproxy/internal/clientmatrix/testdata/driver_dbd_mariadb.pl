# Runs the client matrix's cases with Perl's DBD::MariaDB
# (libdbd-mariadb-perl). Prepared steps use server-side prepared
# statements (mariadb_server_prepare); the reconnect option is
# mariadb_auto_reconnect.

use strict;
use warnings;
use DBI;
use Encode qw(decode FB_CROAK);
use JSON::PP;

$| = 1;
my $json = JSON::PP->new->utf8->canonical(1);

sub emit { print $json->encode($_[0]), "\n" }

# text renders a column value: a string (hex when it is not UTF-8), or
# undef for NULL. DBD::MariaDB returns character strings for text
# columns and byte strings for binary ones.
sub text {
    my ($v) = @_;
    return undef unless defined $v;
    return $v if utf8::is_utf8($v);
    my $copy = $v;
    my $s = eval { decode('UTF-8', $copy, FB_CROAK) };
    return defined $s ? $s : '0x' . unpack('H*', $v);
}

# param turns a case parameter into a value and the SQL type to bind it
# as: numbers are bound as numbers, everything else as DBD's default.
sub param {
    my ($p) = @_;
    return [$p, undef] unless ref $p eq 'HASH';
    return [0 + $p->{int}, DBI::SQL_INTEGER] if exists $p->{int};
    return [0 + $p->{double}, DBI::SQL_DOUBLE] if exists $p->{double};
    return [$p, undef];
}

sub error_fields {
    my ($h, $msg) = @_;
    return { code => 0 + ($h->err // 0), state => $h->state, message => $h->errstr // $msg } if $h && $h->err;
    return { message => $msg };
}

sub open_conn {
    my ($c, $reconnect) = @_;
    my $dsn = "DBI:MariaDB:database=$c->{database};host=$c->{host};port=$c->{port}";
    return DBI->connect($dsn, $c->{user}, $c->{password}, {
        RaiseError => 1, PrintError => 0, AutoCommit => 1,
        mariadb_multi_statements => 1, mariadb_local_infile => 1,
        mariadb_auto_reconnect => $reconnect ? 1 : 0,
        mariadb_compression => $c->{compress} ? 1 : 0,
    });
}

sub results {
    my ($dbh, $sth, $out) = @_;
    while (1) {
        my %res;
        if ($sth->{NUM_OF_FIELDS}) {
            my @cols;
            for my $i (0 .. $sth->{NUM_OF_FIELDS} - 1) {
                push @cols, {
                    name => $sth->{NAME}[$i], type => $sth->{TYPE}[$i],
                    type_name => $sth->{mariadb_type_name}[$i], precision => $sth->{PRECISION}[$i],
                    scale => $sth->{SCALE}[$i], nullable => $sth->{NULLABLE}[$i],
                };
            }
            $res{columns} = \@cols;
            $res{rows} = [map { [map { text($_) } @$_] } @{ $sth->fetchall_arrayref }];
        } else {
            $res{affected} = $sth->rows;
        }
        $res{warnings} = $sth->{mariadb_warning_count};
        push @{ $out->{results} }, \%res;
        # DBD::MariaDB reads one result set of a server-side prepared
        # statement and fails on more_results.
        last if $sth->{mariadb_server_prepare} || !$sth->more_results;
    }
}

sub run_stmt {
    my ($dbh, $sql, $params, $server) = @_;
    my $out = { results => [] };
    my $sth;
    eval {
        $sth = $dbh->prepare($sql, { mariadb_server_prepare => $server });
        my $n = 0;
        $sth->bind_param(++$n, $_->[0], $_->[1]) for @$params;
        $sth->execute;
        results($dbh, $sth, $out);
        1;
    } or do {
        $out->{error} = error_fields($sth && $sth->err ? $sth : $dbh, "$@");
    };
    return $out;
}

open my $fh, '<:raw', $ARGV[0] or die "open $ARGV[0]: $!";
my $conf = decode_json(do { local $/; <$fh> });
for my $case (@{ $conf->{cases} }) {
    emit({ case => $case->{id}, event => 'start' });
    my %conns;
    my $main_id = '';
    my $reconnect = $case->{reconnect} ? 1 : 0;
    my $i = 0;
    for my $st (@{ $case->{steps} }) {
        my $name = $st->{conn} // 'main';
        my $out = { case => $case->{id}, step => $i++, conn => $name };
        eval {
            if (exists $st->{sleep}) {
                select(undef, undef, undef, $st->{sleep});
                $out->{slept} = $st->{sleep};
            } else {
                if (!$conns{$name}) {
                    $conns{$name} = open_conn($name eq 'admin' ? $conf->{admin} : { %{ $conf->{target} }, compress => $case->{compress} ? 1 : 0 }, $reconnect && $name ne 'admin');
                    $main_id = $conns{$name}->{mariadb_thread_id} if $name eq 'main';
                }
                my $dbh = $conns{$name};
                if ($st->{ping}) {
                    $out->{ping} = $dbh->ping ? 'ok' : 'failed';
                } elsif (exists $st->{prepare}) {
                    (my $sql = $st->{prepare}) =~ s/\{main_id\}/$main_id/g;
                    %$out = (%$out, %{ run_stmt($dbh, $sql, [map { param($_) } @{ $st->{params} // [] }], 1) });
                } else {
                    (my $sql = $st->{sql}) =~ s/\{main_id\}/$main_id/g;
                    %$out = (%$out, %{ run_stmt($dbh, $sql, [], 0) });
                }
            }
            1;
        } or do {
            $out->{error} = error_fields($DBI::lasth, "$@");
        };
        emit($out);
    }
    for my $dbh (values %conns) { eval { $dbh->disconnect } }
    emit({ case => $case->{id}, event => 'end' });
}
