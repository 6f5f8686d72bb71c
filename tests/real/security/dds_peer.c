/* A Cyclone DDS participant for tests/real/security/test_dds_security.py: one reader or writer of robo_rl_Msg
 * (dds_peer_msg.idl, compiled by idlc) on one topic, its security settings from CYCLONEDDS_URI.
 *
 *   dds_peer writer TOPIC VALUE SECONDS  writes VALUE every 10 ms for SECONDS s or until SIGTERM; prints
 *                                        {"sent": N}
 *   dds_peer reader TOPIC WANT SECONDS   takes samples until WANT samples of value 1 (the authorized writer) have
 *                                        arrived and at least 3 s more have passed, or SECONDS s; prints
 *                                        {"received": {"VALUE": COUNT, ...}}
 * A participant, topic, reader or writer that DDS-Security refuses prints {"error": "...: REASON"}.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dds/dds.h"
#include "dds_peer_msg.h"

#define VALUES 16

static volatile sig_atomic_t stopping = 0;  /* SIGTERM: the writers' report, then exit */

static void on_term(int signum) {
  (void)signum;
  stopping = 1;
}

static int refused(const char *what, dds_return_t code) {
  printf("{\"error\": \"%s: %s\"}\n", what, dds_strretcode(-code));
  return 0;
}

static int write_for(dds_entity_t writer, int value, double seconds) {
  robo_rl_Msg message = {value};
  dds_time_t end = dds_time() + (dds_duration_t)(seconds * 1e9);
  int sent = 0;
  while (dds_time() < end && !stopping) {
    if (dds_write(writer, &message) == DDS_RETCODE_OK) sent++;
    dds_sleepfor(DDS_MSECS(10));
  }
  printf("{\"sent\": %d}\n", sent);
  return 0;
}

static int read_until(dds_entity_t reader, int want, double seconds) {
  int counts[VALUES] = {0};
  robo_rl_Msg buffer;
  void *samples[1] = {&buffer};
  dds_sample_info_t infos[1];
  dds_time_t now = dds_time(), end = now + (dds_duration_t)(seconds * 1e9), enough = 0;
  while ((now = dds_time()) < end && !(enough && now > enough)) {
    while (dds_take(reader, samples, infos, 1, 1) > 0)
      if (infos[0].valid_data && buffer.value >= 0 && buffer.value < VALUES) counts[buffer.value]++;
    if (!enough && counts[1] >= want) enough = now + DDS_SECS(3);  /* the others get 3 s more to get through */
    dds_sleepfor(DDS_MSECS(5));
  }
  printf("{\"received\": {");
  for (int i = 0, first = 1; i < VALUES; i++)
    if (counts[i]) {
      printf("%s\"%d\": %d", first ? "" : ", ", i, counts[i]);
      first = 0;
    }
  printf("}}\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: dds_peer writer|reader TOPIC VALUE|WANT SECONDS\n");
    return 2;
  }
  signal(SIGTERM, on_term);
  int number = atoi(argv[3]);
  double seconds = atof(argv[4]);
  dds_entity_t participant = dds_create_participant(DDS_DOMAIN_DEFAULT, NULL, NULL);
  if (participant < 0) return refused("participant", participant);
  dds_entity_t topic = dds_create_topic(participant, &robo_rl_Msg_desc, argv[2], NULL, NULL);
  if (topic < 0) return refused("topic", topic);
  dds_qos_t *qos = dds_create_qos();
  dds_qset_reliability(qos, DDS_RELIABILITY_RELIABLE, DDS_SECS(1));
  int is_writer = strcmp(argv[1], "writer") == 0;
  dds_entity_t entity = is_writer ? dds_create_writer(participant, topic, qos, NULL)
                                  : dds_create_reader(participant, topic, qos, NULL);
  if (entity < 0) return refused(is_writer ? "writer" : "reader", entity);
  int code = is_writer ? write_for(entity, number, seconds) : read_until(entity, number, seconds);
  dds_delete_qos(qos);
  dds_delete(participant);
  return code;
}
