# Runs the client matrix's cases with Ruby's mysql2 (ruby-mysql2).
# Prepared steps use server-side prepared statements; the reconnect
# option is mysql2's reconnect: true.

require 'json'
require 'mysql2'

$stdout.sync = true

def emit(obj)
  puts JSON.generate(obj.sort.to_h)
end

# text renders a column value: a string (hex when it is not UTF-8), the
# class and value of anything the driver converted, or nil for NULL.
def text(v)
  return nil if v.nil?
  if v.is_a?(String)
    s = v.dup.force_encoding(Encoding::UTF_8)
    return s.valid_encoding? ? s : '0x' + v.unpack1('H*')
  end
  "#{v.class}:#{v.is_a?(BigDecimal) ? v.to_s('F') : v}"
end

def param(p)
  return p['int'].to_i if p.is_a?(Hash) && p.key?('int')
  return p['double'].to_f if p.is_a?(Hash) && p.key?('double')
  p
end

def error_fields(e)
  if e.is_a?(Mysql2::Error)
    { 'class' => e.class.name, 'code' => e.error_number, 'state' => e.sql_state, 'message' => e.message }
  else
    { 'class' => e.class.name, 'message' => e.message }
  end
end

def open_conn(c, reconnect)
  Mysql2::Client.new(host: c['host'], port: c['port'], username: c['user'], password: c['password'],
                     database: c['database'], encoding: 'utf8mb4', reconnect: reconnect, local_infile: true,
                     flags: Mysql2::Client::MULTI_STATEMENTS | Mysql2::Client::LOCAL_FILES |
                            (c['compress'] ? Mysql2::Client::COMPRESS : 0))
end

def result(client, r, affected, last_id)
  res = if r
          { 'columns' => r.fields, 'rows' => r.to_a.map { |row| row.map { |v| text(v) } } }
        else
          { 'affected' => affected, 'insert_id' => last_id }
        end
  res['warnings'] = client.warning_count
  res
end

def query(client, sql)
  out = { 'results' => [] }
  begin
    r = client.query(sql, as: :array)
    out['results'] << result(client, r, client.affected_rows, client.last_id)
    while client.next_result
      r = client.store_result
      out['results'] << result(client, r, client.affected_rows, client.last_id)
    end
  rescue StandardError => e
    out['error'] = error_fields(e)
  end
  out
end

def prepared(client, sql, params)
  out = { 'results' => [] }
  begin
    st = client.prepare(sql)
    r = st.execute(*params, as: :array)
    out['results'] << result(client, r, st.affected_rows, st.last_id)
    st.close
  rescue StandardError => e
    out['error'] = error_fields(e)
  end
  out
end

conf = JSON.parse(File.read(ARGV[0]))
conf['cases'].each do |kase|
  emit('case' => kase['id'], 'event' => 'start')
  conns = {}
  main_id = ''
  reconnect = kase['reconnect'] ? true : false
  kase['steps'].each_with_index do |st, i|
    name = st['conn'] || 'main'
    out = { 'case' => kase['id'], 'step' => i, 'conn' => name }
    begin
      if st.key?('sleep')
        sleep st['sleep']
        out['slept'] = st['sleep']
      else
        unless conns.key?(name)
          conns[name] = open_conn(name == 'admin' ? conf['admin'] : conf['target'].merge('compress' => kase['compress']), reconnect && name != 'admin')
          main_id = conns[name].thread_id.to_s if name == 'main'
        end
        c = conns[name]
        if st['ping']
          out['ping'] = c.ping ? 'ok' : 'failed'
        elsif st.key?('prepare')
          out.merge!(prepared(c, st['prepare'].gsub('{main_id}', main_id), (st['params'] || []).map { |p| param(p) }))
        else
          out.merge!(query(c, st['sql'].gsub('{main_id}', main_id)))
        end
      end
    rescue StandardError => e
      out['error'] = error_fields(e)
    end
    emit(out)
  end
  conns.each_value { |c| c.close rescue nil }
  emit('case' => kase['id'], 'event' => 'end')
end
